package camera

import (
	"bufio"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"os"

	"github.com/labbridge/bridge/internal/atomicfile"
)

// Frames on disk: colour as 8-bit RGB PNG, depth as 16-bit grey PNG in mm
// (the format RealSense tools and OpenCV's imwrite use for Z16), masks as
// 8-bit grey PNG. The Saver writes them; `bridge track` reads them.

// ReadColorPNG decodes an 8-bit colour PNG into tightly packed BGR8.
func ReadColorPNG(path string) (bgr []byte, w, h int, err error) {
	img, err := decodePNG(path)
	if err != nil {
		return nil, 0, 0, err
	}
	b := img.Bounds()
	w, h = b.Dx(), b.Dy()
	bgr = make([]byte, 3*w*h)
	// RGBA and NRGBA share a layout; opaque PNGs decode to either.
	var pix []byte
	var stride int
	switch m := img.(type) {
	case *image.RGBA:
		pix, stride = m.Pix, m.Stride
	case *image.NRGBA:
		pix, stride = m.Pix, m.Stride
	}
	switch {
	case pix != nil:
		for y := range h {
			row := pix[y*stride:]
			for x := range w {
				i := 3 * (y*w + x)
				bgr[i], bgr[i+1], bgr[i+2] = row[4*x+2], row[4*x+1], row[4*x]
			}
		}
	default:
		if _, ok := img.ColorModel().(color.Palette); !ok && img.ColorModel() != color.GrayModel {
			return nil, 0, 0, fmt.Errorf("camera: %s: colour PNG with %T pixels: want 8-bit RGB or RGBA", path, img)
		}
		for y := range h {
			for x := range w {
				c := color.NRGBAModel.Convert(img.At(b.Min.X+x, b.Min.Y+y)).(color.NRGBA)
				i := 3 * (y*w + x)
				bgr[i], bgr[i+1], bgr[i+2] = c.B, c.G, c.R
			}
		}
	}
	return bgr, w, h, nil
}

// ReadFramePNG reads a saved frame: colour from colorPath and depth from
// depthPath, of the same size, or zeros with depthPath "".
func ReadFramePNG(colorPath, depthPath string) (f Frame, w, h int, err error) {
	if f.Color, w, h, err = ReadColorPNG(colorPath); err != nil {
		return f, 0, 0, err
	}
	if depthPath == "" {
		f.Depth = make([]uint16, w*h)
		return f, w, h, nil
	}
	d, dw, dh, err := ReadDepthPNG(depthPath)
	if err != nil {
		return f, 0, 0, err
	}
	if dw != w || dh != h {
		return f, 0, 0, fmt.Errorf("camera: depth %s is %dx%d and colour %s %dx%d: want the same size", depthPath, dw, dh, colorPath, w, h)
	}
	f.Depth = d
	return f, w, h, nil
}

// ReadDepthPNG decodes a 16-bit grey PNG of depths in mm.
func ReadDepthPNG(path string) (depth []uint16, w, h int, err error) {
	img, err := decodePNG(path)
	if err != nil {
		return nil, 0, 0, err
	}
	m, ok := img.(*image.Gray16)
	if !ok {
		return nil, 0, 0, fmt.Errorf("camera: %s: depth PNG with %T pixels: want 16-bit greyscale in mm", path, img)
	}
	w, h = m.Rect.Dx(), m.Rect.Dy()
	depth = make([]uint16, w*h)
	for y := range h {
		row := m.Pix[y*m.Stride:]
		for x := range w {
			depth[y*w+x] = uint16(row[2*x])<<8 | uint16(row[2*x+1]) // PNG is big-endian
		}
	}
	return depth, w, h, nil
}

func decodePNG(path string) (image.Image, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("camera: %w", err)
	}
	defer f.Close()
	img, err := png.Decode(bufio.NewReader(f))
	if err != nil {
		return nil, fmt.Errorf("camera: %s: %w", path, err)
	}
	return img, nil
}

// WriteColorPNG writes BGR8 as an RGB PNG.
func WriteColorPNG(path string, bgr []byte, w, h int) error {
	m := image.NewNRGBA(image.Rect(0, 0, w, h))
	for i := range w * h {
		m.Pix[4*i], m.Pix[4*i+1], m.Pix[4*i+2], m.Pix[4*i+3] = bgr[3*i+2], bgr[3*i+1], bgr[3*i], 255
	}
	return encodePNG(path, m)
}

// WriteDepthPNG writes Z16 mm as a 16-bit grey PNG.
func WriteDepthPNG(path string, depth []uint16, w, h int) error {
	m := image.NewGray16(image.Rect(0, 0, w, h))
	for i, d := range depth[:w*h] {
		m.Pix[2*i], m.Pix[2*i+1] = byte(d>>8), byte(d)
	}
	return encodePNG(path, m)
}

// WriteMaskPNG writes a 0/255 mask as an 8-bit grey PNG.
func WriteMaskPNG(path string, mask []byte, w, h int) error {
	m := image.NewGray(image.Rect(0, 0, w, h))
	copy(m.Pix, mask[:w*h])
	return encodePNG(path, m)
}

// encodePNG writes img whole or not at all, so that `bridge track`, or
// anyone looking at the folder, never reads half a PNG.
func encodePNG(path string, img image.Image) error {
	enc := png.Encoder{CompressionLevel: png.BestSpeed}
	if err := atomicfile.Write(path, 0o644, func(w io.Writer) error { return enc.Encode(w, img) }); err != nil {
		return fmt.Errorf("camera: %w", err)
	}
	return nil
}
