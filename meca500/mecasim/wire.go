package mecasim

import (
	"math"
	"strconv"
	"strings"
)

// maxFrame is the longest command accepted, terminator excluded. Longer
// input gets [3003] (§2.1) and is discarded up to the next terminator.
const maxFrame = 4096

// framer splits a connection's byte stream into command frames: a frame
// ends with NUL or '\n' (§2.1), and may arrive in pieces or several at once.
type framer struct {
	buf      []byte
	skipping bool // discarding the rest of an overlong frame
}

// feed consumes data, calling frame for every complete frame (without its
// terminator; the slice is only valid during the call) and overlong once per
// frame longer than maxFrame.
func (f *framer) feed(data []byte, frame func([]byte), overlong func()) {
	for len(data) > 0 {
		i := indexTerminator(data)
		if i < 0 {
			if f.skipping {
				return
			}
			if len(f.buf)+len(data) > maxFrame {
				f.buf, f.skipping = f.buf[:0], true
				overlong()
				return
			}
			f.buf = append(f.buf, data...)
			return
		}
		chunk := data[:i]
		data = data[i+1:]
		switch {
		case f.skipping:
			f.skipping = false
		case len(f.buf)+len(chunk) > maxFrame:
			f.buf = f.buf[:0]
			overlong()
		case len(f.buf) == 0:
			frame(chunk)
		default:
			f.buf = append(f.buf, chunk...)
			frame(f.buf)
			f.buf = f.buf[:0]
		}
	}
}

func indexTerminator(b []byte) int {
	for i, c := range b {
		if c == 0 || c == '\n' {
			return i
		}
	}
	return -1
}

// command is a parsed frame: Name(arg, …).
type command struct {
	name   string   // as sent, without the prefix
	silent bool     // "-" prefix (§2.1)
	args   []string // trimmed, not yet numbers
}

// cmdError is the robot's answer to a frame it cannot execute.
type cmdError struct {
	code int
	text string
}

// parseCommand parses one frame. An empty (or blank) frame returns ok false
// and a nil error: it is ignored, like the lone NUL mecademicpy sends after
// connecting (§2.1). A malformed frame gets [1002], an empty name [1001].
func parseCommand(frame []byte) (cmd command, ok bool, e *cmdError) {
	s := strings.TrimFunc(string(frame), isSpace)
	if s == "" {
		return cmd, false, nil
	}
	if s[0] == '-' {
		cmd.silent = true
		s = s[1:]
	}
	n := 0
	for n < len(s) && isNameByte(s[n], n == 0) {
		n++
	}
	cmd.name = s[:n]
	rest := strings.TrimFunc(s[n:], isSpace)
	if cmd.name == "" {
		if rest == "" {
			return cmd, false, &cmdError{codeUnknown, "Empty command."}
		}
		return cmd, false, &cmdError{codeSyntax, "Syntax error, invalid command name: '" + quote(s) + "'."}
	}
	if rest == "" {
		return cmd, true, nil
	}
	if rest[0] != '(' || rest[len(rest)-1] != ')' {
		return cmd, false, &cmdError{codeSyntax, "Syntax error, expected '(arguments)' after '" + quote(cmd.name) + "': '" + quote(rest) + "'."}
	}
	inner := rest[1 : len(rest)-1]
	if strings.ContainsAny(inner, "()") {
		return cmd, false, &cmdError{codeSyntax, "Syntax error, unbalanced parentheses: '" + quote(rest) + "'."}
	}
	if strings.TrimFunc(inner, isSpace) == "" {
		return cmd, true, nil
	}
	cmd.args = strings.Split(inner, ",")
	for i, a := range cmd.args {
		cmd.args[i] = strings.TrimFunc(a, isSpace)
	}
	return cmd, true, nil
}

func isSpace(r rune) bool { return r == ' ' || r == '\t' || r == '\r' || r == '\v' || r == '\f' }

func isNameByte(c byte, first bool) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c == '_' || !first && c >= '0' && c <= '9'
}

// parseNumber reads one argument: a decimal number, finite (§2.1).
func parseNumber(s string) (float64, bool) {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, false
	}
	return v, true
}

// quote makes text from the client safe to echo in a payload: at most 40
// bytes of printable ASCII, without the brackets that frame a message.
func quote(s string) string {
	const maxEcho = 40
	cut := len(s) > maxEcho
	if cut {
		s = s[:maxEcho]
	}
	b := []byte(s)
	for i, c := range b {
		if c < 0x20 || c > 0x7e || c == '[' || c == ']' || c == '\'' {
			b[i] = '?'
		}
	}
	if cut {
		return string(b) + "..."
	}
	return string(b)
}

// fmtNum formats a value as the robot does: plain decimal with at most six
// decimals, trailing zeros dropped, never an exponent (§2.2).
func fmtNum(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "nan"
	}
	s := strconv.FormatFloat(v, 'f', 6, 64)
	s = strings.TrimRight(s, "0")
	s = strings.TrimSuffix(s, ".")
	if s == "-0" {
		return "0"
	}
	return s
}

// fmtList formats a timestamp (µs, when ts ≥ 0) followed by values.
func fmtList(ts int64, vals ...float64) string {
	var sb strings.Builder
	if ts >= 0 {
		sb.WriteString(strconv.FormatInt(ts, 10))
	}
	for i, v := range vals {
		if i > 0 || ts >= 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(fmtNum(v))
	}
	return sb.String()
}

// message frames a reply or event: "[NNNN][payload]\x00", with the "-"
// prefix when asked.
func message(prefix bool, code int, payload string) []byte {
	b := make([]byte, 0, len(payload)+10)
	if prefix {
		b = append(b, '-')
	}
	b = append(b, '[')
	if code < 1000 {
		b = append(b, "000"[:4-len(strconv.Itoa(code))]...)
	}
	b = strconv.AppendInt(b, int64(code), 10)
	b = append(b, ']', '[')
	b = append(b, payload...)
	return append(b, ']', 0)
}
