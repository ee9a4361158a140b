// Package resp reads Redis protocol (RESP2) requests with bounded sizes and
// writes replies. A request is an array of bulk strings, or an inline line.
package resp

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// Limits bound what one request may hold.
type Limits struct {
	MaxBulk int // bytes in one bulk string
	MaxArgs int // elements in one request
}

// ErrProtocol is a malformed request: the connection cannot be resynchronised.
type ErrProtocol struct{ Msg string }

func (e *ErrProtocol) Error() string { return "Protocol error: " + e.Msg }

// ErrTooBig is a well-framed request with a bulk string over the limit: its
// bytes were skipped, so the connection can go on after an error reply.
type ErrTooBig struct{ Len, Max int }

func (e *ErrTooBig) Error() string {
	return fmt.Sprintf("bulk string of %d bytes exceeds the limit of %d", e.Len, e.Max)
}

// Reader reads requests.
type Reader struct {
	r   *bufio.Reader
	lim Limits
}

func NewReader(r io.Reader, lim Limits) *Reader {
	return &Reader{r: bufio.NewReaderSize(r, 64<<10), lim: lim}
}

// Buffered reports bytes already read from the connection and not yet parsed
// (more pipelined requests).
func (r *Reader) Buffered() int { return r.r.Buffered() }

func (r *Reader) line() ([]byte, error) {
	line, err := r.r.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		return nil, &ErrProtocol{"line too long"}
	}
	if err != nil {
		return nil, err
	}
	if len(line) < 2 || line[len(line)-2] != '\r' {
		return nil, &ErrProtocol{"line not ended by CRLF"}
	}
	return line[:len(line)-2], nil
}

// Read returns the next request's arguments. io.EOF at a clean end.
func (r *Reader) Read() ([][]byte, error) {
	line, err := r.line()
	if err != nil {
		return nil, err
	}
	if len(line) == 0 {
		return nil, nil
	}
	if line[0] != '*' {
		return inline(line), nil
	}
	n, err := strconv.Atoi(string(line[1:]))
	if err != nil || n < 0 {
		return nil, &ErrProtocol{"invalid multibulk length"}
	}
	if n > r.lim.MaxArgs {
		return nil, &ErrProtocol{fmt.Sprintf("request of %d arguments exceeds the limit of %d", n, r.lim.MaxArgs)}
	}
	args := make([][]byte, 0, n)
	var tooBig error
	for i := 0; i < n; i++ {
		h, err := r.line()
		if err != nil {
			return nil, err
		}
		if len(h) == 0 || h[0] != '$' {
			return nil, &ErrProtocol{"expected '$'"}
		}
		l, err := strconv.Atoi(string(h[1:]))
		if err != nil || l < 0 {
			return nil, &ErrProtocol{"invalid bulk length"}
		}
		if l > r.lim.MaxBulk {
			// Skip it (and keep reading the request) so that the connection survives.
			if _, err := r.r.Discard(l + 2); err != nil {
				return nil, err
			}
			tooBig = &ErrTooBig{Len: l, Max: r.lim.MaxBulk}
			continue
		}
		b := make([]byte, l+2)
		if _, err := io.ReadFull(r.r, b); err != nil {
			return nil, err
		}
		if b[l] != '\r' || b[l+1] != '\n' {
			return nil, &ErrProtocol{"bulk string not ended by CRLF"}
		}
		args = append(args, b[:l])
	}
	if tooBig != nil {
		return nil, tooBig
	}
	return args, nil
}

func inline(line []byte) [][]byte {
	var args [][]byte
	start := -1
	for i, c := range line {
		if c == ' ' || c == '\t' {
			if start >= 0 {
				args = append(args, line[start:i])
				start = -1
			}
		} else if start < 0 {
			start = i
		}
	}
	if start >= 0 {
		args = append(args, line[start:])
	}
	return args
}

// Writer writes replies.
type Writer struct{ w *bufio.Writer }

func NewWriter(w io.Writer) *Writer { return &Writer{w: bufio.NewWriterSize(w, 64<<10)} }

func (w *Writer) Simple(s string) { w.w.WriteString("+" + s + "\r\n") }
func (w *Writer) Error(s string)  { w.w.WriteString("-" + s + "\r\n") }
func (w *Writer) Int(n int64)     { w.w.WriteString(":" + strconv.FormatInt(n, 10) + "\r\n") }
func (w *Writer) Null()           { w.w.WriteString("$-1\r\n") }
func (w *Writer) Array(n int)     { w.w.WriteString("*" + strconv.Itoa(n) + "\r\n") }
func (w *Writer) Bulk(b []byte) {
	w.w.WriteString("$" + strconv.Itoa(len(b)) + "\r\n")
	w.w.Write(b)
	w.w.WriteString("\r\n")
}
func (w *Writer) Flush() error { return w.w.Flush() }

// IsProtocol reports whether err is a framing error.
func IsProtocol(err error) bool {
	var p *ErrProtocol
	return errors.As(err, &p)
}
