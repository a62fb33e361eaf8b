package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"time"
)

func main() {
	goroutine := flag.String("goroutine", "", "follow the first goroutine whose stack contains this")
	bucket := flag.Duration("bucket", 100*time.Millisecond, "interval of the -goroutine table")
	blocked := flag.String("blocked", "", "sum the time goroutines spent blocked with a stack containing this")
	flag.Parse()
	if flag.NArg() != 1 || (*goroutine == "") == (*blocked == "") {
		fmt.Fprintln(os.Stderr, "usage: tracestates (-goroutine PATTERN [-bucket D] | -blocked PATTERN) TRACE")
		os.Exit(2)
	}
	f, err := os.Open(flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer f.Close()
	if err := run(f, os.Stdout, *goroutine, *bucket, *blocked); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(r io.Reader, w io.Writer, goroutine string, bucket time.Duration, blocked string) error {
	if goroutine != "" {
		tl, err := ReadTimeline(r, goroutine, bucket)
		if err != nil {
			return err
		}
		tl.Print(w)
		return nil
	}
	b, err := ReadBlocked(r, blocked)
	if err != nil {
		return err
	}
	b.Print(w)
	return nil
}
