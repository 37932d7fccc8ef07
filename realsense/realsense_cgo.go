//go:build cgo

package realsense

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// Our own declarations of the librealsense2 C API (2.50 to 2.59), docs/realsense.md §1-§2.
typedef struct rs2_error rs2_error;
typedef struct rs2_context rs2_context;
typedef struct rs2_device_list rs2_device_list;
typedef struct rs2_device rs2_device;
typedef struct rs2_pipeline rs2_pipeline;
typedef struct rs2_config rs2_config;
typedef struct rs2_pipeline_profile rs2_pipeline_profile;
typedef struct rs2_stream_profile_list rs2_stream_profile_list;
typedef struct rs2_stream_profile rs2_stream_profile;
typedef struct rs2_frame rs2_frame;
typedef struct rs2_sensor_list rs2_sensor_list;
typedef struct rs2_sensor rs2_sensor;

enum { RS2_STREAM_ANY = 0, RS2_STREAM_DEPTH = 1, RS2_STREAM_COLOR = 2 };
enum { RS2_FORMAT_ANY = 0, RS2_FORMAT_Z16 = 1, RS2_FORMAT_RGB8 = 5, RS2_FORMAT_BGR8 = 6 };
enum { RS2_CAMERA_INFO_NAME = 0, RS2_CAMERA_INFO_SERIAL_NUMBER = 1, RS2_CAMERA_INFO_FIRMWARE_VERSION = 2 };
enum { RS2_EXTENSION_DEPTH_SENSOR = 7, RS2_EXTENSION_COMPOSITE_FRAME = 10, RS2_EXTENSION_PLAYBACK = 16 };
enum { RS2_PLAYBACK_STATUS_STOPPED = 3 };

typedef struct rs2_intrinsics {
	int width;
	int height;
	float ppx;
	float ppy;
	float fx;
	float fy;
	int model;
	float coeffs[5];
} rs2_intrinsics;

// X(return type, name, parameters) for every function the binding resolves.
#define RS_FUNCS(X) \
	X(int, rs2_get_api_version, (rs2_error **)) \
	X(rs2_context *, rs2_create_context, (int, rs2_error **)) \
	X(void, rs2_delete_context, (rs2_context *)) \
	X(rs2_device_list *, rs2_query_devices, (const rs2_context *, rs2_error **)) \
	X(int, rs2_get_device_count, (const rs2_device_list *, rs2_error **)) \
	X(rs2_device *, rs2_create_device, (const rs2_device_list *, int, rs2_error **)) \
	X(void, rs2_delete_device, (rs2_device *)) \
	X(void, rs2_delete_device_list, (rs2_device_list *)) \
	X(int, rs2_supports_device_info, (const rs2_device *, int, rs2_error **)) \
	X(const char *, rs2_get_device_info, (const rs2_device *, int, rs2_error **)) \
	X(int, rs2_is_device_extendable_to, (const rs2_device *, int, rs2_error **)) \
	X(void, rs2_playback_device_set_real_time, (const rs2_device *, int, rs2_error **)) \
	X(int, rs2_playback_device_get_current_status, (const rs2_device *, rs2_error **)) \
	X(void, rs2_playback_device_stop, (const rs2_device *, rs2_error **)) \
	X(void, rs2_playback_device_resume, (const rs2_device *, rs2_error **)) \
	X(rs2_pipeline *, rs2_create_pipeline, (rs2_context *, rs2_error **)) \
	X(void, rs2_delete_pipeline, (rs2_pipeline *)) \
	X(void, rs2_pipeline_stop, (rs2_pipeline *, rs2_error **)) \
	X(rs2_config *, rs2_create_config, (rs2_error **)) \
	X(void, rs2_delete_config, (rs2_config *)) \
	X(void, rs2_config_enable_stream, (rs2_config *, int, int, int, int, int, int, rs2_error **)) \
	X(void, rs2_config_enable_device, (rs2_config *, const char *, rs2_error **)) \
	X(void, rs2_config_enable_device_from_file_repeat_option, (rs2_config *, const char *, int, rs2_error **)) \
	X(rs2_pipeline_profile *, rs2_config_resolve, (rs2_config *, rs2_pipeline *, rs2_error **)) \
	X(rs2_pipeline_profile *, rs2_pipeline_start_with_config, (rs2_pipeline *, rs2_config *, rs2_error **)) \
	X(void, rs2_delete_pipeline_profile, (rs2_pipeline_profile *)) \
	X(rs2_device *, rs2_pipeline_profile_get_device, (rs2_pipeline_profile *, rs2_error **)) \
	X(rs2_stream_profile_list *, rs2_pipeline_profile_get_streams, (rs2_pipeline_profile *, rs2_error **)) \
	X(int, rs2_get_stream_profiles_count, (const rs2_stream_profile_list *, rs2_error **)) \
	X(const rs2_stream_profile *, rs2_get_stream_profile, (const rs2_stream_profile_list *, int, rs2_error **)) \
	X(void, rs2_delete_stream_profiles_list, (rs2_stream_profile_list *)) \
	X(void, rs2_get_stream_profile_data, (const rs2_stream_profile *, int *, int *, int *, int *, int *, rs2_error **)) \
	X(void, rs2_get_video_stream_intrinsics, (const rs2_stream_profile *, rs2_intrinsics *, rs2_error **)) \
	X(rs2_sensor_list *, rs2_query_sensors, (const rs2_device *, rs2_error **)) \
	X(int, rs2_get_sensors_count, (const rs2_sensor_list *, rs2_error **)) \
	X(rs2_sensor *, rs2_create_sensor, (const rs2_sensor_list *, int, rs2_error **)) \
	X(void, rs2_delete_sensor, (rs2_sensor *)) \
	X(void, rs2_delete_sensor_list, (rs2_sensor_list *)) \
	X(int, rs2_is_sensor_extendable_to, (const rs2_sensor *, int, rs2_error **)) \
	X(float, rs2_get_depth_scale, (rs2_sensor *, rs2_error **)) \
	X(int, rs2_pipeline_try_wait_for_frames, (rs2_pipeline *, rs2_frame **, unsigned int, rs2_error **)) \
	X(int, rs2_is_frame_extendable_to, (const rs2_frame *, int, rs2_error **)) \
	X(int, rs2_embedded_frames_count, (rs2_frame *, rs2_error **)) \
	X(rs2_frame *, rs2_extract_frame, (rs2_frame *, int, rs2_error **)) \
	X(void, rs2_release_frame, (rs2_frame *)) \
	X(const rs2_stream_profile *, rs2_get_frame_stream_profile, (const rs2_frame *, rs2_error **)) \
	X(const void *, rs2_get_frame_data, (const rs2_frame *, rs2_error **)) \
	X(int, rs2_get_frame_width, (const rs2_frame *, rs2_error **)) \
	X(int, rs2_get_frame_height, (const rs2_frame *, rs2_error **)) \
	X(int, rs2_get_frame_stride_in_bytes, (const rs2_frame *, rs2_error **)) \
	X(double, rs2_get_frame_timestamp, (const rs2_frame *, rs2_error **)) \
	X(unsigned long long, rs2_get_frame_number, (const rs2_frame *, rs2_error **)) \
	X(const char *, rs2_get_error_message, (const rs2_error *)) \
	X(const char *, rs2_get_failed_function, (const rs2_error *)) \
	X(const char *, rs2_get_failed_args, (const rs2_error *)) \
	X(int, rs2_get_librealsense_exception_type, (const rs2_error *)) \
	X(void, rs2_free_error, (rs2_error *))

#define RS_FIELD(ret, name, params) ret (*name) params;
typedef struct rs_api {
	void *handle;
	RS_FUNCS(RS_FIELD)
} rs_api;

// rs_preload loads a library with global symbol visibility; NULL or the dlerror message.
static const char *rs_preload(const char *path) {
	if (dlopen(path, RTLD_NOW | RTLD_GLOBAL) == NULL) {
		const char *m = dlerror();
		return m ? m : "dlopen failed";
	}
	return NULL;
}

// rs_load opens path and resolves every symbol into a new rs_api. It returns 0 and sets *out,
// or 1 with the dlerror message in msg, or 2 with the missing symbol's name in msg.
#define RS_RESOLVE(ret, name, params) \
	*(void **)(&api->name) = dlsym(h, #name); \
	if (api->name == NULL) { snprintf(msg, msglen, "%s", #name); goto missing; }
static int rs_load(const char *path, rs_api **out, char *msg, size_t msglen) {
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (h == NULL) {
		const char *m = dlerror();
		snprintf(msg, msglen, "%s", m ? m : "dlopen failed");
		return 1;
	}
	rs_api *api = calloc(1, sizeof *api);
	if (api == NULL) {
		snprintf(msg, msglen, "out of memory");
		dlclose(h);
		return 1;
	}
	api->handle = h;
	RS_FUNCS(RS_RESOLVE)
	*out = api;
	return 0;
missing:
	free(api);
	dlclose(h);
	return 2;
}

static void rs_free_api(rs_api *a) { free(a); }

// Thin wrappers: cgo cannot call through function pointers.
static int rs_api_version(rs_api *a, rs2_error **e) { return a->rs2_get_api_version(e); }
static rs2_context *rs_create_context(rs_api *a, int api_version, rs2_error **e) { return a->rs2_create_context(api_version, e); }
static void rs_delete_context(rs_api *a, rs2_context *c) { a->rs2_delete_context(c); }
static rs2_device_list *rs_query_devices(rs_api *a, rs2_context *c, rs2_error **e) { return a->rs2_query_devices(c, e); }
static int rs_device_count(rs_api *a, rs2_device_list *l, rs2_error **e) { return a->rs2_get_device_count(l, e); }
static rs2_device *rs_create_device(rs_api *a, rs2_device_list *l, int i, rs2_error **e) { return a->rs2_create_device(l, i, e); }
static void rs_delete_device(rs_api *a, rs2_device *d) { a->rs2_delete_device(d); }
static void rs_delete_device_list(rs_api *a, rs2_device_list *l) { a->rs2_delete_device_list(l); }
// rs_device_info returns the info string, or NULL when unsupported or on error.
static const char *rs_device_info(rs_api *a, rs2_device *d, int info, rs2_error **e) {
	if (!a->rs2_supports_device_info(d, info, e) || *e) return NULL;
	return a->rs2_get_device_info(d, info, e);
}
static int rs_is_device_extendable_to(rs_api *a, rs2_device *d, int x, rs2_error **e) { return a->rs2_is_device_extendable_to(d, x, e); }
static void rs_playback_set_real_time(rs_api *a, rs2_device *d, int rt, rs2_error **e) { a->rs2_playback_device_set_real_time(d, rt, e); }
static int rs_playback_status(rs_api *a, rs2_device *d, rs2_error **e) { return a->rs2_playback_device_get_current_status(d, e); }
static void rs_playback_stop(rs_api *a, rs2_device *d, rs2_error **e) { a->rs2_playback_device_stop(d, e); }
static void rs_playback_resume(rs_api *a, rs2_device *d, rs2_error **e) { a->rs2_playback_device_resume(d, e); }
static rs2_pipeline_profile *rs_resolve(rs_api *a, rs2_config *c, rs2_pipeline *p, rs2_error **e) { return a->rs2_config_resolve(c, p, e); }
static rs2_pipeline *rs_create_pipeline(rs_api *a, rs2_context *c, rs2_error **e) { return a->rs2_create_pipeline(c, e); }
static void rs_delete_pipeline(rs_api *a, rs2_pipeline *p) { a->rs2_delete_pipeline(p); }
static void rs_pipeline_stop(rs_api *a, rs2_pipeline *p, rs2_error **e) { a->rs2_pipeline_stop(p, e); }
static rs2_config *rs_create_config(rs_api *a, rs2_error **e) { return a->rs2_create_config(e); }
static void rs_delete_config(rs_api *a, rs2_config *c) { a->rs2_delete_config(c); }
static void rs_enable_stream(rs_api *a, rs2_config *c, int stream, int w, int h, int format, int fps, rs2_error **e) {
	a->rs2_config_enable_stream(c, stream, 0, w, h, format, fps, e);
}
static void rs_enable_device(rs_api *a, rs2_config *c, const char *serial, rs2_error **e) { a->rs2_config_enable_device(c, serial, e); }
static void rs_enable_file(rs_api *a, rs2_config *c, const char *file, int loop, rs2_error **e) {
	a->rs2_config_enable_device_from_file_repeat_option(c, file, loop, e);
}
static rs2_pipeline_profile *rs_start(rs_api *a, rs2_pipeline *p, rs2_config *c, rs2_error **e) { return a->rs2_pipeline_start_with_config(p, c, e); }
static void rs_delete_profile(rs_api *a, rs2_pipeline_profile *p) { a->rs2_delete_pipeline_profile(p); }
static rs2_device *rs_profile_device(rs_api *a, rs2_pipeline_profile *p, rs2_error **e) { return a->rs2_pipeline_profile_get_device(p, e); }
static rs2_stream_profile_list *rs_profile_streams(rs_api *a, rs2_pipeline_profile *p, rs2_error **e) { return a->rs2_pipeline_profile_get_streams(p, e); }
static int rs_stream_count(rs_api *a, rs2_stream_profile_list *l, rs2_error **e) { return a->rs2_get_stream_profiles_count(l, e); }
static void rs_delete_stream_list(rs_api *a, rs2_stream_profile_list *l) { a->rs2_delete_stream_profiles_list(l); }
// rs_stream_info reads the type and format of stream i of l and, for video streams, its
// intrinsics.
static void rs_stream_info(rs_api *a, rs2_stream_profile_list *l, int i, int *stream, int *format, int *fps,
		rs2_intrinsics *intr, rs2_error **e) {
	const rs2_stream_profile *p = a->rs2_get_stream_profile(l, i, e);
	if (*e) return;
	int index, uid;
	a->rs2_get_stream_profile_data(p, stream, format, &index, &uid, fps, e);
	if (*e) return;
	if (*stream == RS2_STREAM_DEPTH || *stream == RS2_STREAM_COLOR) a->rs2_get_video_stream_intrinsics(p, intr, e);
}
// rs_depth_scale returns the depth scale of the first depth sensor of d, or 0 if there is none.
static float rs_depth_scale(rs_api *a, rs2_device *d, rs2_error **e) {
	float scale = 0;
	rs2_sensor_list *l = a->rs2_query_sensors(d, e);
	if (*e) return 0;
	int n = a->rs2_get_sensors_count(l, e);
	for (int i = 0; !*e && i < n && scale == 0; i++) {
		rs2_sensor *s = a->rs2_create_sensor(l, i, e);
		if (*e) break;
		if (a->rs2_is_sensor_extendable_to(s, RS2_EXTENSION_DEPTH_SENSOR, e) && !*e) scale = a->rs2_get_depth_scale(s, e);
		a->rs2_delete_sensor(s);
	}
	a->rs2_delete_sensor_list(l);
	return scale;
}
static const char *rs_err_message(rs_api *a, rs2_error *e) { return a->rs2_get_error_message(e); }
static const char *rs_err_function(rs_api *a, rs2_error *e) { return a->rs2_get_failed_function(e); }
static const char *rs_err_args(rs_api *a, rs2_error *e) { return a->rs2_get_failed_args(e); }
static int rs_err_type(rs_api *a, rs2_error *e) { return a->rs2_get_librealsense_exception_type(e); }
static void rs_free_error(rs_api *a, rs2_error *e) { a->rs2_free_error(e); }

// Results of rs_read.
enum { RS_OK = 0, RS_TIMEOUT = 1, RS_ERROR = 2, RS_BAD_FRAME = 3, RS_INCOMPLETE = 4 };

// rs_readinfo is filled by rs_read; it lives in C memory so that a read allocates nothing.
typedef struct rs_readinfo {
	rs2_error *err;
	unsigned long long color_number, depth_number;
	double color_ts, depth_ts;
	int got_color, got_depth;
	int bad_stream, bad_format, bad_width, bad_height;
} rs_readinfo;

// rs_copy copies one frame into the caller's buffers (BGR8 colour, converting from RGB8 if
// needed, and Z16 depth, honouring the stride). It does not release f.
static int rs_copy(rs_api *a, rs2_frame *f, int w, int h, uint8_t *color, uint16_t *depth, rs_readinfo *in) {
	rs2_error **e = &in->err;
	const rs2_stream_profile *p = a->rs2_get_frame_stream_profile(f, e);
	if (*e) return RS_ERROR;
	int stream, format, index, uid, fps;
	a->rs2_get_stream_profile_data(p, &stream, &format, &index, &uid, &fps, e);
	if (*e) return RS_ERROR;
	if (!((stream == RS2_STREAM_COLOR && color) || (stream == RS2_STREAM_DEPTH && depth))) return RS_OK;
	int fw = a->rs2_get_frame_width(f, e);
	if (*e) return RS_ERROR;
	int fh = a->rs2_get_frame_height(f, e);
	if (*e) return RS_ERROR;
	int stride = a->rs2_get_frame_stride_in_bytes(f, e);
	if (*e) return RS_ERROR;
	const uint8_t *src = a->rs2_get_frame_data(f, e);
	if (*e) return RS_ERROR;
	unsigned long long num = a->rs2_get_frame_number(f, e);
	if (*e) return RS_ERROR;
	double ts = a->rs2_get_frame_timestamp(f, e);
	if (*e) return RS_ERROR;
	int okfmt = stream == RS2_STREAM_DEPTH ? format == RS2_FORMAT_Z16 : (format == RS2_FORMAT_BGR8 || format == RS2_FORMAT_RGB8);
	int bpp = stream == RS2_STREAM_DEPTH ? 2 : 3;
	if (fw != w || fh != h || !okfmt || src == NULL || stride < w * bpp) {
		in->bad_stream = stream; in->bad_format = format; in->bad_width = fw; in->bad_height = fh;
		return RS_BAD_FRAME;
	}
	if (stream == RS2_STREAM_DEPTH) {
		for (int y = 0; y < h; y++) memcpy(depth + (size_t)y * w, src + (size_t)y * stride, (size_t)w * 2);
		in->depth_number = num; in->depth_ts = ts; in->got_depth = 1;
	} else if (format == RS2_FORMAT_BGR8) {
		for (int y = 0; y < h; y++) memcpy(color + (size_t)y * w * 3, src + (size_t)y * stride, (size_t)w * 3);
		in->color_number = num; in->color_ts = ts; in->got_color = 1;
	} else {
		for (int y = 0; y < h; y++) {
			const uint8_t *s = src + (size_t)y * stride;
			uint8_t *d = color + (size_t)y * w * 3;
			for (int x = 0; x < w; x++, s += 3, d += 3) { d[0] = s[2]; d[1] = s[1]; d[2] = s[0]; }
		}
		in->color_number = num; in->color_ts = ts; in->got_color = 1;
	}
	return RS_OK;
}

// rs_read waits up to timeout_ms for a frameset, copies its colour and depth frames into the
// buffers (NULL when that stream is not wanted) and releases every frame before returning.
static int rs_read(rs_api *a, rs2_pipeline *p, unsigned int timeout_ms, int w, int h, uint8_t *color,
		uint16_t *depth, rs_readinfo *in) {
	memset(in, 0, sizeof *in);
	rs2_frame *fs = NULL;
	if (!a->rs2_pipeline_try_wait_for_frames(p, &fs, timeout_ms, &in->err)) {
		if (fs) a->rs2_release_frame(fs);
		return in->err ? RS_ERROR : RS_TIMEOUT;
	}
	if (in->err) {
		if (fs) a->rs2_release_frame(fs);
		return RS_ERROR;
	}
	int rc = RS_OK;
	int composite = a->rs2_is_frame_extendable_to(fs, RS2_EXTENSION_COMPOSITE_FRAME, &in->err);
	if (in->err) {
		rc = RS_ERROR;
	} else if (!composite) {
		rc = rs_copy(a, fs, w, h, color, depth, in);
	} else {
		int n = a->rs2_embedded_frames_count(fs, &in->err);
		if (in->err) rc = RS_ERROR;
		for (int i = 0; rc == RS_OK && i < n; i++) {
			rs2_frame *f = a->rs2_extract_frame(fs, i, &in->err);
			if (in->err) {
				if (f) a->rs2_release_frame(f);
				rc = RS_ERROR;
				break;
			}
			rc = rs_copy(a, f, w, h, color, depth, in);
			a->rs2_release_frame(f);
		}
	}
	a->rs2_release_frame(fs);
	if (rc == RS_OK && ((color && !in->got_color) || (depth && !in->got_depth))) rc = RS_INCOMPLETE;
	return rc;
}
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"
)

// Compile-time check that our rs2_intrinsics has the documented 48-byte layout.
var _ [48 - unsafe.Sizeof(C.rs2_intrinsics{})]struct{}
var _ [unsafe.Sizeof(C.rs2_intrinsics{}) - 48]struct{}

// Lib is a loaded librealsense2 with one rs2_context. The library stays mapped for the life of
// the process (it starts threads of its own, so unloading it is never safe); Close deletes the
// context. A Lib is safe for concurrent use by Cameras it opened, except Close.
type Lib struct {
	api     *C.rs_api
	ctx     *C.rs2_context
	path    string
	version Version
}

// Load finds and loads the library (see Options), checks every symbol of the C API the binding
// uses, and creates a context with api_version 25000.
func Load(opts Options) (*Lib, error) {
	for _, p := range opts.Preload {
		cp := C.CString(p)
		msg := C.rs_preload(cp)
		C.free(unsafe.Pointer(cp))
		if msg != nil {
			return nil, withInstallHint(fmt.Errorf("%w: cannot preload the Python runtime %q: %s", ErrLibraryNotFound, p, C.GoString(msg)))
		}
	}
	names, explicit := opts.candidates(os.Getenv(EnvLibrary))
	standard := len(names)
	if !explicit {
		for _, dir := range opts.SearchDirs {
			for _, pat := range []string{"librealsense2.so*", "pyrealsense2*.so"} {
				m, _ := filepath.Glob(filepath.Join(dir, pat))
				names = append(names, m...)
			}
		}
	}
	// Failures of files found in SearchDirs are reported one by one (they exist, so their
	// reason matters, e.g. a Python runtime not preloaded); the standard names are summed up.
	var found []string
	var missing error
	for i, name := range names {
		api, err := loadOne(name)
		if err == nil {
			return newLib(api, name)
		}
		if errors.Is(err, ErrMissingSymbol) && missing == nil {
			missing = err
		}
		if explicit && missing != nil {
			return nil, withInstallHint(missing)
		}
		if explicit {
			return nil, withInstallHint(fmt.Errorf("%w: %v", ErrLibraryNotFound, err))
		}
		if i >= standard {
			found = append(found, err.Error())
		}
	}
	if missing != nil {
		return nil, withInstallHint(missing)
	}
	detail := ""
	if len(found) > 0 {
		detail = " (" + strings.Join(found, "; ") + ")"
	}
	searched := fmt.Sprintf("searched the system's library path for %s … %s", names[0], names[standard-1])
	if len(opts.SearchDirs) > 0 {
		searched += fmt.Sprintf(" and %d matching file(s) in %s", len(names)-standard, strings.Join(opts.SearchDirs, ", "))
	}
	return nil, withInstallHint(fmt.Errorf("%w: %s%s", ErrLibraryNotFound, searched, detail))
}

func loadOne(name string) (*C.rs_api, error) {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	var msg [512]C.char
	var api *C.rs_api
	switch C.rs_load(cname, &api, &msg[0], C.size_t(len(msg))) {
	case 0:
		return api, nil
	case 2:
		return nil, fmt.Errorf("%w: %q has no %s (librealsense2 2.50 or newer is required)", ErrMissingSymbol, name, C.GoString(&msg[0]))
	default:
		return nil, fmt.Errorf("cannot load %q: %s", name, C.GoString(&msg[0]))
	}
}

func newLib(api *C.rs_api, path string) (*Lib, error) {
	l := &Lib{api: api, path: path}
	var e *C.rs2_error
	v := C.rs_api_version(api, &e)
	if err := l.err(e); err != nil {
		C.rs_free_api(api)
		return nil, err
	}
	l.version = versionOf(int(v))
	if l.version.Major != 2 || l.version.Minor < 50 {
		C.rs_free_api(api)
		return nil, fmt.Errorf("%w: %q is version %v, 2.50 or newer is required", ErrMissingSymbol, path, l.version)
	}
	ctx := C.rs_create_context(api, APIVersion, &e)
	if err := l.err(e); err != nil {
		C.rs_free_api(api)
		return nil, err
	}
	l.ctx = ctx
	return l, nil
}

// err turns an rs2_error into a Go error and frees it; nil stays nil.
func (l *Lib) err(e *C.rs2_error) error {
	if e == nil {
		return nil
	}
	re := &Error{
		Function: C.GoString(C.rs_err_function(l.api, e)),
		Args:     C.GoString(C.rs_err_args(l.api, e)),
		Message:  C.GoString(C.rs_err_message(l.api, e)),
		Type:     ExceptionType(C.rs_err_type(l.api, e)),
	}
	C.rs_free_error(l.api, e)
	return re
}

// Path is the file the library was loaded from.
func (l *Lib) Path() string { return l.path }

// Version is the runtime library's version.
func (l *Lib) Version() Version { return l.version }

// Close deletes the context. Close every Camera first.
func (l *Lib) Close() error {
	if l.ctx == nil {
		return ErrClosed
	}
	C.rs_delete_context(l.api, l.ctx)
	l.ctx = nil
	return nil
}

// ListDevices lists the connected cameras.
func (l *Lib) ListDevices() ([]DeviceInfo, error) {
	if l.ctx == nil {
		return nil, ErrClosed
	}
	var e *C.rs2_error
	list := C.rs_query_devices(l.api, l.ctx, &e)
	if err := l.err(e); err != nil {
		return nil, err
	}
	defer C.rs_delete_device_list(l.api, list)
	n := C.rs_device_count(l.api, list, &e)
	if err := l.err(e); err != nil {
		return nil, err
	}
	infos := make([]DeviceInfo, 0, int(n))
	for i := C.int(0); i < n; i++ {
		dev := C.rs_create_device(l.api, list, i, &e)
		if err := l.err(e); err != nil {
			return nil, err
		}
		var d DeviceInfo
		var err error
		for _, f := range []struct {
			info C.int
			dst  *string
		}{
			{C.RS2_CAMERA_INFO_NAME, &d.Name},
			{C.RS2_CAMERA_INFO_SERIAL_NUMBER, &d.Serial},
			{C.RS2_CAMERA_INFO_FIRMWARE_VERSION, &d.Firmware},
		} {
			s := C.rs_device_info(l.api, dev, f.info, &e)
			if err = l.err(e); err != nil {
				break
			}
			if s != nil {
				*f.dst = C.GoString(s) // owned by the device: copy before deleting it
			}
		}
		C.rs_delete_device(l.api, dev)
		if err != nil {
			return nil, err
		}
		infos = append(infos, d)
	}
	return infos, nil
}

// Camera is a started pipeline on a camera or a recording. It is not safe for concurrent use:
// a Read or Close that meets another one in progress fails with ErrBusy rather than stopping
// a pipeline under a read (docs/realsense.md §6.5).
type Camera struct {
	lib *Lib
	// conf outlives the pipeline's start: it holds the resolved profile, which a looped
	// recording starts again.
	conf *C.rs2_config
	pipe *C.rs2_pipeline
	// dev is the binding's own reference to the device, so that the device is destroyed
	// when the binding deletes it, after the pipeline, and never inside rs2_pipeline_stop
	// while the library's playback thread still runs (§6.5).
	dev           *C.rs2_device
	info          *C.rs_readinfo
	cfg           Config
	playback      bool
	started       bool
	busy          atomic.Bool
	width, height int
	color, depth  Intrinsics
	units         float32
}

// OpenCamera starts streaming. For a camera the mode must be 640x480 or 848x480 at 30, 60 or 90
// fps; colour is requested as BGR8 and depth as Z16. For a recording (Config.PlaybackFile) the
// file dictates the mode, RGB8 colour is converted to BGR8 on reading, and the recording plays
// as fast as it is read, every frameset in order.
func (l *Lib) OpenCamera(cfg Config) (*Camera, error) {
	if l.ctx == nil {
		return nil, ErrClosed
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.PlaybackFile != "" {
		if _, err := os.Stat(cfg.PlaybackFile); err != nil {
			return nil, fmt.Errorf("realsense: playback file %q: %w", cfg.PlaybackFile, err)
		}
	} else {
		devs, err := l.ListDevices()
		if err != nil {
			return nil, err
		}
		found := false
		for _, d := range devs {
			found = found || cfg.Serial == "" || d.Serial == cfg.Serial
		}
		if !found {
			return nil, fmt.Errorf("%w: serial %q (%d cameras connected)", ErrNoDevice, cfg.Serial, len(devs))
		}
	}
	c := &Camera{lib: l, cfg: cfg, playback: cfg.PlaybackFile != ""}
	c.info = (*C.rs_readinfo)(C.calloc(1, C.size_t(unsafe.Sizeof(C.rs_readinfo{}))))
	if err := c.open(); err != nil {
		if serr := c.shutdown(); serr != nil {
			err = errors.Join(err, serr)
		}
		C.free(unsafe.Pointer(c.info))
		return nil, err
	}
	if c.cfg.Timeout == 0 {
		c.cfg.Timeout = DefaultTimeout
	}
	return c, nil
}

// open configures the streams, resolves the configuration to its device, turns real-time
// playback off before the first frame is read, and starts the pipeline. On failure the caller
// runs shutdown.
func (c *Camera) open() error {
	l, cfg := c.lib, c.cfg
	var e *C.rs2_error
	c.conf = C.rs_create_config(l.api, &e)
	if err := l.err(e); err != nil {
		c.conf = nil
		return err
	}
	colorFmt, depthFmt := C.int(C.RS2_FORMAT_BGR8), C.int(C.RS2_FORMAT_Z16)
	if c.playback {
		cfile := C.CString(cfg.PlaybackFile)
		// Never the library's repeat: it restarts the streams from its own thread without
		// the pipeline's lock, racing a stop (§6.5). Read rewinds a looped recording itself.
		C.rs_enable_file(l.api, c.conf, cfile, 0, &e)
		C.free(unsafe.Pointer(cfile))
		if err := l.err(e); err != nil {
			return err
		}
		colorFmt = C.RS2_FORMAT_ANY // the recording's own format, RGB8 or BGR8
	} else if cfg.Serial != "" {
		cs := C.CString(cfg.Serial)
		C.rs_enable_device(l.api, c.conf, cs, &e)
		C.free(unsafe.Pointer(cs))
		if err := l.err(e); err != nil {
			return err
		}
	}
	w, h, fps := C.int(cfg.Width), C.int(cfg.Height), C.int(cfg.FPS)
	if cfg.Color {
		C.rs_enable_stream(l.api, c.conf, C.RS2_STREAM_COLOR, w, h, colorFmt, fps, &e)
		if err := l.err(e); err != nil {
			return err
		}
	}
	if cfg.Depth {
		C.rs_enable_stream(l.api, c.conf, C.RS2_STREAM_DEPTH, w, h, depthFmt, fps, &e)
		if err := l.err(e); err != nil {
			return err
		}
	}
	c.pipe = C.rs_create_pipeline(l.api, l.ctx, &e)
	if err := l.err(e); err != nil {
		c.pipe = nil
		return err
	}
	// Resolving first gives the device before any frame flows; the start below reuses
	// the profile the config cached.
	prof := C.rs_resolve(l.api, c.conf, c.pipe, &e)
	if err := l.err(e); err != nil {
		return err
	}
	c.dev = C.rs_profile_device(l.api, prof, &e)
	C.rs_delete_profile(l.api, prof)
	if err := l.err(e); err != nil {
		c.dev = nil
		return err
	}
	if c.playback {
		pb := C.rs_is_device_extendable_to(l.api, c.dev, C.RS2_EXTENSION_PLAYBACK, &e)
		if err := l.err(e); err != nil {
			return err
		}
		if pb == 0 {
			return fmt.Errorf("%w: playback file %q did not open as a recording; give a .bag or .db3 file that librealsense recorded",
				ErrBadConfig, cfg.PlaybackFile)
		}
		// Off before the start: a real-time playback thread drops framesets a slow reader
		// misses, and one switched while it runs has already dropped some.
		C.rs_playback_set_real_time(l.api, c.dev, 0, &e)
		if err := l.err(e); err != nil {
			return err
		}
	}
	prof = C.rs_start(l.api, c.pipe, c.conf, &e)
	if err := l.err(e); err != nil {
		return err
	}
	c.started = true
	err := c.describe(prof)
	C.rs_delete_profile(l.api, prof)
	if err != nil {
		return err
	}
	return c.taken()
}

// taken returns once the playback thread has taken the start that rs2_pipeline_start
// queued on it: rs2_playback_device_resume queues a step that does nothing on a playback
// that is not paused, and waits for the thread to run it. From then on the device reports
// STOPPED only at the end of the recording (or after a stop), never before it has played.
func (c *Camera) taken() error {
	if !c.playback {
		return nil
	}
	C.rs_playback_resume(c.lib.api, c.dev, &c.info.err)
	return c.takeErr()
}

// describe reads the streams' intrinsics and the depth scale from the started profile.
func (c *Camera) describe(prof *C.rs2_pipeline_profile) error {
	l := c.lib
	var e *C.rs2_error
	list := C.rs_profile_streams(l.api, prof, &e)
	if err := l.err(e); err != nil {
		return err
	}
	defer C.rs_delete_stream_list(l.api, list)
	n := C.rs_stream_count(l.api, list, &e)
	if err := l.err(e); err != nil {
		return err
	}
	var gotColor, gotDepth bool
	for i := C.int(0); i < n; i++ {
		var stream, format, fps C.int
		var ci C.rs2_intrinsics
		C.rs_stream_info(l.api, list, i, &stream, &format, &fps, &ci, &e)
		if err := l.err(e); err != nil {
			return err
		}
		in := intrinsicsOf(&ci)
		switch {
		case stream == C.RS2_STREAM_COLOR && c.cfg.Color:
			c.color, gotColor = in, true
		case stream == C.RS2_STREAM_DEPTH && c.cfg.Depth:
			c.depth, gotDepth = in, true
		}
	}
	if c.cfg.Color && !gotColor || c.cfg.Depth && !gotDepth {
		return fmt.Errorf("%w: started without a requested stream (color %v, depth %v)", ErrBadFrame, gotColor, gotDepth)
	}
	if gotColor && gotDepth && (c.color.Width != c.depth.Width || c.color.Height != c.depth.Height) {
		return fmt.Errorf("%w: colour %dx%d and depth %dx%d differ in size", ErrBadFrame,
			c.color.Width, c.color.Height, c.depth.Width, c.depth.Height)
	}
	if gotDepth {
		c.width, c.height = c.depth.Width, c.depth.Height
	} else {
		c.width, c.height = c.color.Width, c.color.Height
	}
	if c.cfg.Depth {
		c.units = float32(C.rs_depth_scale(l.api, c.dev, &e))
		if err := l.err(e); err != nil {
			return err
		}
	}
	return nil
}

func intrinsicsOf(ci *C.rs2_intrinsics) Intrinsics {
	in := Intrinsics{
		Width: int(ci.width), Height: int(ci.height),
		PPX: float32(ci.ppx), PPY: float32(ci.ppy),
		FX: float32(ci.fx), FY: float32(ci.fy),
		Model: Distortion(ci.model),
	}
	for i := range in.Coeffs {
		in.Coeffs[i] = float32(ci.coeffs[i])
	}
	return in
}

// Width and Height are the frame size of the started streams.
func (c *Camera) Width() int  { return c.width }
func (c *Camera) Height() int { return c.height }

// Intrinsics returns the colour and depth streams' intrinsics (zero for a disabled stream).
func (c *Camera) Intrinsics() (color, depth Intrinsics) { return c.color, c.depth }

// DepthUnits is the size of one depth unit in metres (0.001: millimetres), or 0 without depth.
func (c *Camera) DepthUnits() float32 { return c.units }

// NewFrame allocates a Frame with buffers sized for the started streams.
func (c *Camera) NewFrame() *Frame {
	f := &Frame{Width: c.width, Height: c.height}
	if c.cfg.Color {
		f.Color = make([]byte, c.width*c.height*3)
	}
	if c.cfg.Depth {
		f.Depth = make([]uint16, c.width*c.height)
	}
	return f
}

// pollSlice bounds one wait inside Read so that a cancelled context is noticed promptly.
const pollSlice = 100 * time.Millisecond

// Read waits for the next frameset and copies it into f, whose buffers must hold a whole frame.
// It returns ErrTimeout after Config.Timeout without a frameset, and at once at the end of a
// recording played once (a looped one starts again); ctx's error if ctx ends first; an error
// matching ErrDisconnected when the library reports the camera gone; ErrBusy if another Read
// or Close is in progress. Read allocates nothing.
func (c *Camera) Read(ctx context.Context, f *Frame) error {
	if !c.busy.CompareAndSwap(false, true) {
		return ErrBusy
	}
	defer c.busy.Store(false)
	if c.pipe == nil {
		return ErrClosed
	}
	if err := f.check(c.cfg.Color, c.cfg.Depth, c.width, c.height); err != nil {
		return err
	}
	var color *C.uint8_t
	var depth *C.uint16_t
	if c.cfg.Color {
		color = (*C.uint8_t)(unsafe.Pointer(&f.Color[0]))
	}
	if c.cfg.Depth {
		depth = (*C.uint16_t)(unsafe.Pointer(&f.Depth[0]))
	}
	deadline := time.Now().Add(c.cfg.Timeout)
	for {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("realsense: read cancelled: %w", err)
		}
		wait := time.Until(deadline)
		if wait <= 0 {
			return fmt.Errorf("%w: no frameset within %v", ErrTimeout, c.cfg.Timeout)
		}
		wait = min(wait, pollSlice)
		if d, ok := ctx.Deadline(); ok {
			wait = max(min(wait, time.Until(d)), time.Millisecond)
		}
		ended, err := c.ended()
		if err != nil {
			return err
		}
		if ended {
			// Everything the recording delivers is queued once its playback thread has
			// stopped: look without waiting.
			wait = 0
		}
		rc := C.rs_read(c.lib.api, c.pipe, C.uint(wait/time.Millisecond), C.int(c.width), C.int(c.height), color, depth, c.info)
		switch rc {
		case C.RS_TIMEOUT:
			if !ended {
				continue
			}
			if !c.cfg.Loop {
				return fmt.Errorf("%w: the recording %s has ended", ErrTimeout, c.cfg.PlaybackFile)
			}
			if err := c.rewind(); err != nil {
				return err
			}
			deadline = time.Now().Add(c.cfg.Timeout)
			continue
		case C.RS_ERROR:
			return c.takeErr()
		case C.RS_BAD_FRAME:
			in := c.info
			return fmt.Errorf("%w: stream %d format %d size %dx%d, want %dx%d Z16 depth or BGR8/RGB8 colour",
				ErrBadFrame, in.bad_stream, in.bad_format, in.bad_width, in.bad_height, c.width, c.height)
		case C.RS_INCOMPLETE:
			// A frameset without every requested stream (the syncer may emit one while the
			// streams start): wait for a complete one.
			continue
		}
		in := c.info
		f.Width, f.Height = c.width, c.height
		f.ColorFrameNumber = uint64(in.color_number)
		if c.cfg.Depth {
			f.FrameNumber, f.TimestampMs = uint64(in.depth_number), float64(in.depth_ts)
		} else {
			f.FrameNumber, f.TimestampMs = uint64(in.color_number), float64(in.color_ts)
		}
		return nil
	}
}

// ended reports whether a recording has played to its end: its playback thread, which
// has taken the start (taken), stops the device after the last frameset.
func (c *Camera) ended() (bool, error) {
	if !c.playback {
		return false, nil
	}
	st := C.rs_playback_status(c.lib.api, c.dev, &c.info.err)
	if err := c.takeErr(); err != nil {
		return false, err
	}
	return st == C.RS2_PLAYBACK_STATUS_STOPPED, nil
}

// takeErr returns and clears the error left in c.info by a call of the read path, which
// passes &c.info.err (C memory) so that Read allocates nothing.
func (c *Camera) takeErr() error {
	e := c.info.err
	c.info.err = nil
	return c.lib.err(e)
}

// halt stops the pipeline, then waits for the playback thread: rs2_pipeline_stop only queues
// the device's own stop on that thread, and rs2_playback_device_stop queues one more and
// returns once the thread has run both, so nothing of the device runs after halt.
func (c *Camera) halt() error {
	var err error
	if c.started {
		c.started = false
		C.rs_pipeline_stop(c.lib.api, c.pipe, &c.info.err)
		err = c.takeErr()
	}
	if c.playback && c.dev != nil {
		C.rs_playback_stop(c.lib.api, c.dev, &c.info.err)
		if perr := c.takeErr(); perr != nil && err == nil {
			err = perr
		}
	}
	return err
}

// rewind plays a looped recording again from its start on the caller's thread: the stop of
// Close, then a start from the config's resolved profile, on the same device.
func (c *Camera) rewind() error {
	if err := c.halt(); err != nil {
		return err
	}
	prof := C.rs_start(c.lib.api, c.pipe, c.conf, &c.info.err)
	if err := c.takeErr(); err != nil {
		return err
	}
	C.rs_delete_profile(c.lib.api, prof)
	c.started = true
	return c.taken()
}

// shutdown stops and frees in the one order that keeps the library's threads off freed
// memory (§6.5): halt (the pipeline stopped, the playback thread idle), then the pipeline
// (releasing any frameset still queued while its device lives), the config, and last the
// binding's device reference, whose deletion destroys an idle device.
func (c *Camera) shutdown() error {
	err := c.halt()
	if c.pipe != nil {
		C.rs_delete_pipeline(c.lib.api, c.pipe)
		c.pipe = nil
	}
	if c.conf != nil {
		C.rs_delete_config(c.lib.api, c.conf)
		c.conf = nil
	}
	if c.dev != nil {
		C.rs_delete_device(c.lib.api, c.dev)
		c.dev = nil
	}
	return err
}

// Close stops the streams and frees the pipeline; a second Close returns ErrClosed.
func (c *Camera) Close() error {
	if !c.busy.CompareAndSwap(false, true) {
		return ErrBusy
	}
	defer c.busy.Store(false)
	if c.pipe == nil {
		return ErrClosed
	}
	err := c.shutdown()
	C.free(unsafe.Pointer(c.info))
	c.info = nil
	return err
}
