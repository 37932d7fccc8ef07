package emio

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// Servo IDs are logged as a list of numbers, never as base64 or Go syntax.
func TestServoIDsLogAsNumbers(t *testing.T) {
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("emio: motors ready", "ids", servoIDs{0, 1, 2, 3})
	if !strings.Contains(buf.String(), `"ids":[0,1,2,3]`) {
		t.Errorf("JSON: %s", buf.String())
	}
	buf.Reset()
	slog.New(slog.NewTextHandler(&buf, nil)).Info("emio: motors ready", "ids", servoIDs{0, 1, 2, 3})
	if !strings.Contains(buf.String(), `ids="[0 1 2 3]"`) && !strings.Contains(buf.String(), "ids=[0 1 2 3]") {
		t.Errorf("text: %s", buf.String())
	}
}
