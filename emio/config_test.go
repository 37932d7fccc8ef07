package emio_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/labbridge/bridge/dynamixel"
	"github.com/labbridge/bridge/emio"
	"github.com/labbridge/bridge/plant"
)

// The defaults validate, and each bad field comes back as its own
// FieldError named by its key.
func TestConfigValidate(t *testing.T) {
	c := emio.DefaultConfig()
	if err := c.Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	c.IDs = []byte{1, 2, 1}
	c.Mode = dynamixel.OperatingMode(1)
	c.ProfileVelocity = 40000
	c.RejoinSpeed = 0
	c.Bus.Baud = 12345
	err := c.Validate()
	if !errors.Is(err, emio.ErrConfig) {
		t.Fatalf("Validate = %v, want ErrConfig", err)
	}
	var fields []string
	for _, fe := range plant.FieldErrors(err) {
		fields = append(fields, fe.Field)
	}
	if got := strings.Join(fields, " "); got != "ids mode profile_velocity rejoin_speed baud" {
		t.Errorf("fields %q", got)
	}
	if want := "emio: invalid configuration: ids = [1 2 1]: want distinct IDs in 0..252"; !strings.Contains(err.Error(), want) {
		t.Errorf("%v, want …%s…", err, want)
	}
}
