package config

import (
	"fmt"
	"log/slog"
	"os"

	defaultconfig "github.com/labbridge/bridge"
)

// Load reads the configuration at path; with path "", ./bridge.toml when it
// exists, else the embedded default (bridge.toml of the repository, which
// documents every key). It returns where the configuration came from.
func Load(path string) (*Config, string, error) {
	if path == "" {
		if _, err := os.Stat("bridge.toml"); err == nil {
			path = "bridge.toml"
		}
	}
	if path == "" {
		c, err := Parse(defaultconfig.TOML())
		return c, "embedded bridge.toml", err
	}
	c, err := LoadFile(path)
	return c, path, err
}

// Level is log_level's; validation refused any other value, so an
// unparsable one (a Service built by hand) is INFO.
func (s Service) Level() slog.Level {
	var level slog.Level
	_ = level.UnmarshalText([]byte(s.LogLevel))
	return level
}

// Link returns the link called name, or the first with name "".
func (c *Config) Link(name string) (*LinkTable, error) {
	for i := range c.Links {
		if name == "" || c.Links[i].Name == name {
			return &c.Links[i], nil
		}
	}
	return nil, fmt.Errorf("%w: no link %q", ErrConfig, name)
}
