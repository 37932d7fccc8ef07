// Package defaultconfig holds bridge.toml, the embedded default configuration
// (docs/architecture.md "Configuration"), so that `bridge sim` runs from a fresh clone
// with no file at all.
package defaultconfig

import (
	"bytes"
	_ "embed"
)

//go:embed bridge.toml
var file []byte

// TOML returns a copy of bridge.toml from the repository root.
func TOML() []byte { return bytes.Clone(file) }
