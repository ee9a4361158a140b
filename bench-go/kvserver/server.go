// Package kvserver answers the Redis protocol from any KVBench store:
// SET, GET, DEL, MSET, MGET, EXISTS, KEYS and SCAN with a prefix pattern,
// DBSIZE, FLUSHDB, PING, QUIT, AUTH, CONFIG GET and COMMAND (enough for
// redis-benchmark), commands matched case-insensitively. Pipelined runs of SET
// or GET become one engine batch. An oversized bulk string gets an error reply
// and the connection goes on; a malformed frame gets an error and the
// connection is closed; the store is never touched by either.
package kvserver

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	"settbench/resp"
	"settbench/stores"
)

// Server serves one store.
type Server struct {
	kv   stores.KV
	pass string
	lim  resp.Limits
}

// New makes a server; pass "" for no password.
func New(kv stores.KV, password string, maxBulk int) *Server {
	return &Server{kv: kv, pass: password, lim: resp.Limits{MaxBulk: maxBulk, MaxArgs: 1 << 20}}
}

// Serve accepts connections until ln is closed.
func (s *Server) Serve(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go s.serve(c)
	}
}

// request is a parsed command, or the error reply owed for one that could not be taken.
type request struct {
	args [][]byte
	err  string
}

func (s *Server) serve(c net.Conn) {
	defer c.Close()
	r := resp.NewReader(c, s.lim)
	w := resp.NewWriter(c)
	authed := s.pass == ""
	for {
		// Gather the pipelined requests already received, then answer them in order.
		var reqs []request
		for {
			args, err := r.Read()
			var tooBig *resp.ErrTooBig
			switch {
			case errors.As(err, &tooBig):
				reqs = append(reqs, request{err: "ERR " + err.Error()})
			case err != nil:
				s.run(reqs, w, &authed)
				if resp.IsProtocol(err) {
					w.Error("ERR " + err.Error())
				}
				w.Flush()
				return
			case args != nil:
				reqs = append(reqs, request{args: args})
			}
			if r.Buffered() == 0 {
				break
			}
		}
		quit := s.run(reqs, w, &authed)
		if err := w.Flush(); err != nil || quit {
			return
		}
	}
}

// run answers reqs in order, turning runs of SET and of GET into one batch each.
// It returns true after QUIT.
func (s *Server) run(reqs []request, w *resp.Writer, authed *bool) bool {
	for i := 0; i < len(reqs); {
		if reqs[i].err != "" {
			w.Error(reqs[i].err)
			i++
			continue
		}
		args := reqs[i].args
		cmd := strings.ToUpper(string(args[0]))
		if !*authed && cmd != "AUTH" && cmd != "QUIT" {
			w.Error("NOAUTH Authentication required.")
			i++
			continue
		}
		if (cmd == "SET" && len(args) == 3) || (cmd == "GET" && len(args) == 2) {
			j := i
			for j < len(reqs) && reqs[j].err == "" && strings.EqualFold(string(reqs[j].args[0]), cmd) && len(reqs[j].args) == len(args) {
				j++
			}
			if cmd == "SET" {
				var ks, vs [][]byte
				for _, q := range reqs[i:j] {
					ks, vs = append(ks, q.args[1]), append(vs, q.args[2])
				}
				if err := s.kv.BatchSet(ks, vs); err != nil {
					for range reqs[i:j] {
						w.Error("ERR " + err.Error())
					}
				} else {
					for range reqs[i:j] {
						w.Simple("OK")
					}
				}
			} else {
				var ks [][]byte
				for _, q := range reqs[i:j] {
					ks = append(ks, q.args[1])
				}
				vals, err := s.kv.BatchGet(ks)
				for k := range ks {
					switch {
					case err != nil:
						w.Error("ERR " + err.Error())
					case vals[k] == nil:
						w.Null()
					default:
						w.Bulk(vals[k])
					}
				}
			}
			i = j
			continue
		}
		if s.one(cmd, args, w, authed) {
			return true
		}
		i++
	}
	return false
}

func (s *Server) one(cmd string, args [][]byte, w *resp.Writer, authed *bool) bool {
	argc := func(min int) bool {
		if len(args) < min {
			w.Error(fmt.Sprintf("ERR wrong number of arguments for '%s' command", strings.ToLower(cmd)))
			return false
		}
		return true
	}
	fail := func(err error) { w.Error("ERR " + err.Error()) }
	switch cmd {
	case "PING":
		if len(args) > 1 {
			w.Bulk(args[1])
		} else {
			w.Simple("PONG")
		}
	case "QUIT":
		w.Simple("OK")
		return true
	case "AUTH":
		if !argc(2) {
			break
		}
		if s.pass == "" {
			w.Error("ERR AUTH called without any password configured")
		} else if string(args[len(args)-1]) == s.pass {
			*authed = true
			w.Simple("OK")
		} else {
			w.Error("WRONGPASS invalid username-password pair")
		}
	case "SET":
		if !argc(3) {
			break
		}
		if err := s.kv.Set(args[1], args[2]); err != nil {
			fail(err)
		} else {
			w.Simple("OK")
		}
	case "GET":
		if !argc(2) {
			break
		}
		v, ok, err := s.kv.Get(args[1])
		switch {
		case err != nil:
			fail(err)
		case !ok:
			w.Null()
		default:
			w.Bulk(v)
		}
	case "MSET":
		if len(args) < 3 || len(args)%2 == 0 {
			w.Error("ERR wrong number of arguments for 'mset' command")
			break
		}
		var ks, vs [][]byte
		for i := 1; i < len(args); i += 2 {
			ks, vs = append(ks, args[i]), append(vs, args[i+1])
		}
		if err := s.kv.BatchSet(ks, vs); err != nil {
			fail(err)
		} else {
			w.Simple("OK")
		}
	case "MGET":
		if !argc(2) {
			break
		}
		vals, err := s.kv.BatchGet(args[1:])
		if err != nil {
			fail(err)
			break
		}
		w.Array(len(vals))
		for _, v := range vals {
			if v == nil {
				w.Null()
			} else {
				w.Bulk(v)
			}
		}
	case "DEL", "EXISTS":
		if !argc(2) {
			break
		}
		var n int64
		for _, k := range args[1:] {
			_, ok, err := s.kv.Get(k)
			if err != nil {
				fail(err)
				return false
			}
			if ok {
				n++
				if cmd == "DEL" {
					if err := s.kv.Delete(k); err != nil {
						fail(err)
						return false
					}
				}
			}
		}
		w.Int(n)
	case "KEYS":
		if !argc(2) {
			break
		}
		prefix, ok := prefixOf(args[1])
		if !ok {
			w.Error("ERR only prefix patterns (prefix*) are supported")
			break
		}
		var keys [][]byte
		if _, err := s.kv.Prefix(prefix, 1<<30, func(k, _ []byte) bool {
			keys = append(keys, append([]byte(nil), k...))
			return true
		}); err != nil {
			fail(err)
			break
		}
		w.Array(len(keys))
		for _, k := range keys {
			w.Bulk(k)
		}
	case "SCAN":
		s.scan(args, w)
	case "DBSIZE":
		n, err := s.kv.Prefix(nil, 1<<62, func(_, _ []byte) bool { return true })
		if err != nil {
			fail(err)
		} else {
			w.Int(int64(n))
		}
	case "FLUSHDB", "FLUSHALL":
		if err := s.kv.Clear(); err != nil {
			fail(err)
		} else {
			w.Simple("OK")
		}
	case "CONFIG":
		// redis-benchmark asks for "save" and "appendonly"; answer as a server without them.
		if len(args) >= 3 && strings.EqualFold(string(args[1]), "GET") {
			name := strings.ToLower(string(args[2]))
			switch name {
			case "save":
				w.Array(2)
				w.Bulk([]byte("save"))
				w.Bulk([]byte(""))
			case "appendonly":
				w.Array(2)
				w.Bulk([]byte("appendonly"))
				w.Bulk([]byte("no"))
			default:
				w.Array(0)
			}
		} else {
			w.Error("ERR only CONFIG GET is supported")
		}
	case "COMMAND":
		w.Array(0)
	default:
		w.Error(fmt.Sprintf("ERR unknown command '%s'", strings.ToLower(cmd)))
	}
	return false
}

// scan implements SCAN cursor [MATCH prefix*] [COUNT n]; the cursor counts keys
// already returned under the prefix.
func (s *Server) scan(args [][]byte, w *resp.Writer) {
	if len(args) < 2 {
		w.Error("ERR wrong number of arguments for 'scan' command")
		return
	}
	cursor, err := strconv.Atoi(string(args[1]))
	if err != nil || cursor < 0 {
		w.Error("ERR invalid cursor")
		return
	}
	prefix, count := []byte(nil), 10
	for i := 2; i+1 < len(args); i += 2 {
		switch strings.ToUpper(string(args[i])) {
		case "MATCH":
			p, ok := prefixOf(args[i+1])
			if !ok {
				w.Error("ERR only prefix patterns (prefix*) are supported")
				return
			}
			prefix = p
		case "COUNT":
			if count, err = strconv.Atoi(string(args[i+1])); err != nil || count <= 0 {
				w.Error("ERR value is not an integer or out of range")
				return
			}
		}
	}
	var keys [][]byte
	seen := 0
	if _, err := s.kv.Prefix(prefix, cursor+count+1, func(k, _ []byte) bool {
		if seen >= cursor && len(keys) < count {
			keys = append(keys, append([]byte(nil), k...))
		}
		seen++
		return true
	}); err != nil {
		w.Error("ERR " + err.Error())
		return
	}
	next := 0
	if seen > cursor+count {
		next = cursor + count
	}
	w.Array(2)
	w.Bulk([]byte(strconv.Itoa(next)))
	w.Array(len(keys))
	for _, k := range keys {
		w.Bulk(k)
	}
}

// prefixOf accepts "*" or "prefix*" with no other glob characters.
func prefixOf(pattern []byte) ([]byte, bool) {
	if len(pattern) == 0 || pattern[len(pattern)-1] != '*' {
		return nil, false
	}
	p := pattern[:len(pattern)-1]
	if bytes.ContainsAny(p, "*?[]\\") {
		return nil, false
	}
	return p, true
}
