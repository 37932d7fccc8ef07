package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/labbridge/bridge/internal/record"
	"github.com/labbridge/bridge/internal/report"
)

// pageError is a page that could not be written: the path and the
// reason in a user's words.
type pageError struct {
	path string
	err  error
}

func (e *pageError) Error() string {
	return fmt.Sprintf("bridge report: cannot write %s: %s", e.path, record.Explain(e.path, e.err))
}

func (e *pageError) Unwrap() error { return e.err }

// cmdReport is `bridge report FILE [-out report.html]`: the page of a
// recording made by bridge record (docs/tap.md §5), and a line per link.
func cmdReport(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("report", "report FILE [-out report.html]  (FILE: run.csv reads the run.LINK.csv of bridge record; or one link's CSV)", stderr)
	out := fs.String("out", "report.html", "where to write the HTML `page`")
	// FILE may come before or after the flags.
	var file string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return err
			}
			return errUsage
		}
		if fs.NArg() == 0 {
			break
		}
		if file != "" {
			fmt.Fprintf(stderr, "bridge report: unexpected argument %q: one recording at a time\n", fs.Arg(0))
			return errUsage
		}
		file, args = fs.Arg(0), fs.Args()[1:]
	}
	if file == "" {
		fmt.Fprintln(stderr, "bridge report: name the recording, like bridge report run.csv")
		fs.Usage()
		return errUsage
	}
	rec, err := report.Open(file)
	if err != nil {
		return err
	}
	r := report.Build(rec)
	// Through a temporary file: a failure leaves an older page whole.
	if err := r.WriteFile(*out); err != nil {
		return &pageError{*out, err}
	}
	fmt.Fprintf(stdout, "wrote %s: %s, %d link(s)\n", *out, rec.Name, len(rec.Links))
	for i, l := range rec.Links {
		fmt.Fprintf(stdout, "  %s\n", r.Summary(i))
		for _, w := range l.Warnings {
			fmt.Fprintf(stderr, "bridge report: %s: %s\n", l.File, w)
		}
	}
	return nil
}
