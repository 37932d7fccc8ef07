package config

import (
	"fmt"
	"io"
	"os"
)

// MaxFileSize bounds a configuration file: the largest shipped one is a few
// KB, and the TOML decoder's memory grows with what it is given.
const MaxFileSize = 1 << 20

// MaxNesting bounds how deep arrays and inline tables nest. The decoder's
// memory grows with the square of the depth: 80 KB of nested inline tables
// took 19 GB and three minutes.
const MaxNesting = 32

// MaxKeyParts bounds the parts of a dotted key or [table] name, each a table
// deeper: a [table] name of 100,000 parts (200 KB) took more than 6 GB in
// three seconds. bridge.toml's deepest is link.partner.controller.
const MaxKeyParts = 8

// MaxKeys bounds the keys and [table] names of a file: the decoder keeps a
// few hundred bytes for each (1 MiB of short dotted keys took 800 MB).
// bridge.toml has about 150.
const MaxKeys = 16384

// MaxLinks bounds the [[link]] tables: each link is a thread, five sockets
// and a partner; 10,000 links (a 1 MiB file) took 16,000 files and 670 MB
// before failing. bridge bench links runs at most as many.
const MaxLinks = 256

// tooLarge is the error of a file over MaxFileSize; size < 0 is unknown.
func tooLarge(size int64) error {
	n := "more than 1048576"
	if size >= 0 {
		n = fmt.Sprint(size)
	}
	return fmt.Errorf("%w: the file is %s bytes; a bridge configuration is at most 1 MiB (%d bytes): give the path of a bridge.toml", ErrConfig, n, MaxFileSize)
}

// readBounded reads at most MaxFileSize bytes of path, so that a huge or
// endless file (a device, a FIFO) is refused without being read whole.
func readBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxFileSize {
		size := int64(-1)
		if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
			size = st.Size()
		}
		return nil, tooLarge(size)
	}
	return b, nil
}

// checkBounds refuses, before the TOML decoder sees it, a document larger
// than MaxFileSize, whose arrays and inline tables nest deeper than
// MaxNesting, with a dotted key or [table] name of more than MaxKeyParts
// parts, or with more than MaxKeys keys and [table] names. It is one linear
// pass that knows TOML's comments and its four kinds of strings well enough
// not to count a bracket, a dot or an equals sign inside them; what it lets
// through the decoder still checks.
func checkBounds(data []byte) error {
	if len(data) > MaxFileSize {
		return tooLarge(int64(len(data)))
	}
	// dots counts the dots of the dotted run (bare or quoted parts, blanks
	// and dots) that ends at i; a value has at most one (1.5, 00:00:00.5).
	// A key is counted at its '=', a [table] name at its line's first '['.
	depth, line, dots, keys, lineStart := 0, 1, 0, 0, true
	for i := 0; i < len(data); i++ {
		c := data[i]
		if lineStart && c == '[' && depth == 0 || c == '=' {
			keys++
			if keys > MaxKeys {
				return fmt.Errorf("%w: line %d: more than %d keys and [table] names; a bridge configuration has a few hundred: give the path of a bridge.toml", ErrConfig, line, MaxKeys)
			}
		}
		lineStart = lineStart && (c == ' ' || c == '\t') || c == '\n'
		switch c {
		case '\n':
			line++
			dots = 0
		case '#':
			for i+1 < len(data) && data[i+1] != '\n' {
				i++
			}
		case '"', '\'':
			multi := i+2 < len(data) && data[i+1] == c && data[i+2] == c
			if multi {
				i += 2
				dots = 0 // a multi-line string is a value, never a key part
			}
			i, line = skipString(data, i+1, c, multi, line)
		case '.':
			dots++
			if dots >= MaxKeyParts {
				return fmt.Errorf("%w: line %d: a dotted key or [table] name of more than %d parts; a bridge configuration's keys have at most %d parts, like [link.partner.controller]: look for a long a.b.c… on that line", ErrConfig, line, MaxKeyParts, MaxKeyParts)
			}
		case ' ', '\t':
		case '[', '{':
			dots = 0
			depth++
			if depth > MaxNesting {
				return fmt.Errorf("%w: line %d: arrays and inline tables nested more than %d deep; a bridge configuration nests them at most %d deep: look for an unclosed [ or { on that line", ErrConfig, line, MaxNesting, MaxNesting)
			}
		case ']', '}':
			dots = 0
			depth = max(depth-1, 0) // unbalanced: the decoder says where
		default:
			if !bareKeyByte(c) {
				dots = 0
			}
		}
	}
	return nil
}

// checkLinks refuses more than MaxLinks [[link]] tables in the decoded
// file, before any of them is decoded or built.
func checkLinks(raw map[string]any) error {
	links, _ := raw["link"].([]map[string]any)
	if len(links) > MaxLinks {
		return fmt.Errorf("%w: %d [[link]] tables: want at most %d links in one bridge; run several bridges, each with its own configuration and metrics port", ErrConfig, len(links), MaxLinks)
	}
	return nil
}

// bareKeyByte reports whether c may be in a bare key: A-Za-z0-9_-.
func bareKeyByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// skipString returns the index of the closing quote of the string whose
// body starts at i (or the end of data), and the line it ends on. A basic
// string (") has backslash escapes; a literal one (') has none. A single
// line string ends at a newline too: the decoder refuses it there.
func skipString(data []byte, i int, q byte, multi bool, line int) (int, int) {
	for ; i < len(data); i++ {
		switch c := data[i]; {
		case c == '\\' && q == '"':
			if i+1 < len(data) && data[i+1] == '\n' {
				line++
			}
			i++ // an escaped character, a quote included
		case c == '\n':
			if !multi {
				return i - 1, line // the newline is counted by the caller
			}
			line++
		case c == q && !multi:
			return i, line
		case c == q && i+2 < len(data) && data[i+1] == q && data[i+2] == q:
			// Up to two more quotes may end the string's body: """a""""".
			i += 2
			for k := 0; k < 2 && i+1 < len(data) && data[i+1] == q; k++ {
				i++
			}
			return i, line
		}
	}
	return len(data), line
}
