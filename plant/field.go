package plant

import "fmt"

// FieldError is one bad value of a driver's configuration, as each driver's
// Validate returns them (joined with errors.Join): the field's key as a
// configuration file names it ("vel_timeout", "joints[2]"), the value, what
// is allowed, and when the value had to be one of some names, those names
// (for a "did you mean"). Err is the driver's sentinel for an invalid
// configuration, which errors.Is finds through it.
type FieldError struct {
	Err     error
	Field   string
	Value   any
	Want    string
	Allowed []string
}

func (e *FieldError) Error() string {
	return fmt.Sprintf("%v: %s = %v: want %s", e.Err, e.Field, e.Value, e.Want)
}

// Unwrap returns the driver's sentinel.
func (e *FieldError) Unwrap() error { return e.Err }

// FieldErrors lists the FieldErrors in err, which may join several
// (errors.Join), in order; none when err holds none.
func FieldErrors(err error) []*FieldError {
	var out []*FieldError
	var walk func(error)
	walk = func(err error) {
		switch e := err.(type) {
		case nil:
		case *FieldError:
			out = append(out, e)
		case interface{ Unwrap() []error }:
			for _, x := range e.Unwrap() {
				walk(x)
			}
		case interface{ Unwrap() error }:
			walk(e.Unwrap())
		}
	}
	walk(err)
	return out
}
