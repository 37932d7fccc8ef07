package config

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"strconv"
	"strings"

	defaultconfig "github.com/labbridge/bridge"
	"github.com/labbridge/bridge/simulink"
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
		c, err := ParseConfig(defaultconfig.TOML())
		return c, "embedded bridge.toml", err
	}
	c, err := LoadConfig(path)
	return c, path, err
}

// Level is log_level's; validation refused any other value, so an
// unparsable one (a Service built by hand) is INFO.
func (s Service) Level() slog.Level {
	var level slog.Level
	_ = level.UnmarshalText([]byte(s.LogLevel))
	return level
}

// LoadLink reads the configuration at path and returns its link called
// name, or its first link with name "".
func LoadLink(path, name string) (*Link, error) {
	c, err := LoadConfig(path)
	if err != nil {
		return nil, err
	}
	return c.Link(name)
}

// Link returns the link called name, or the first with name "".
func (c *Config) Link(name string) (*Link, error) {
	for i := range c.Links {
		if name == "" || c.Links[i].Name == name {
			return &c.Links[i], nil
		}
	}
	return nil, fmt.Errorf("%w: no link %q", ErrConfig, name)
}

// PartnerFlags are the controller flags of `bridge partner`, for a partner
// run without a configuration file.
type PartnerFlags struct {
	Controller string  // hold, constant, sine (jacobian needs a file)
	U          string  // constant: the command, comma-separated (rad)
	Amplitude  float64 // sine: rad, every motor
	Frequency  float64 // sine: Hz, every motor
}

// Spec turns the flags into a controller spec for commands of n values.
func (f PartnerFlags) Spec(n int) (simulink.ControllerSpec, error) {
	spec := simulink.ControllerSpec{Kind: f.Controller}
	switch f.Controller {
	case "constant":
		for _, s := range strings.Split(f.U, ",") {
			v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
				return spec, fmt.Errorf("bridge partner: -u %q: want %d finite numbers separated by commas (rad)", f.U, n)
			}
			spec.U = append(spec.U, v)
		}
	case "sine":
		spec.Amplitude, spec.Frequency = repeat(f.Amplitude, n), repeat(f.Frequency, n)
	case "jacobian":
		return spec, errors.New("bridge partner: -controller jacobian needs its parameters: use -config with a [link.partner.controller] table")
	}
	return spec, nil
}
