package kvserver

import (
	"bufio"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"settbench/stores"
)

func start(t *testing.T, pass string) (addr string, kv stores.KV) {
	t.Helper()
	kv, err := stores.OpenKV("sett", t.TempDir(), stores.KVOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go New(kv, pass, 1024).Serve(ln)
	t.Cleanup(func() {
		ln.Close()
		kv.Close()
	})
	return ln.Addr().String(), kv
}

type client struct {
	c net.Conn
	r *bufio.Reader
}

func dial(t *testing.T, addr string) *client {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	t.Cleanup(func() { c.Close() })
	return &client{c: c, r: bufio.NewReader(c)}
}

func cmd(args ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b.String()
}

// reply reads one reply and renders it compactly: +OK, -ERR..., :3, $v, nil, [a b].
func (c *client) reply(t *testing.T) string {
	t.Helper()
	line, err := c.r.ReadString('\n')
	if err != nil {
		t.Fatalf("reading a reply: %v", err)
	}
	line = strings.TrimSuffix(line, "\r\n")
	switch line[0] {
	case '$':
		var n int
		fmt.Sscanf(line[1:], "%d", &n)
		if n < 0 {
			return "nil"
		}
		b := make([]byte, n+2)
		if _, err := c.r.Read(b[:0]); err != nil {
			t.Fatal(err)
		}
		for got := 0; got < n+2; {
			m, err := c.r.Read(b[got:])
			if err != nil {
				t.Fatal(err)
			}
			got += m
		}
		return "$" + string(b[:n])
	case '*':
		var n int
		fmt.Sscanf(line[1:], "%d", &n)
		parts := make([]string, n)
		for i := range parts {
			parts[i] = c.reply(t)
		}
		return "[" + strings.Join(parts, " ") + "]"
	}
	return line
}

func (c *client) do(t *testing.T, args ...string) string {
	t.Helper()
	if _, err := c.c.Write([]byte(cmd(args...))); err != nil {
		t.Fatal(err)
	}
	return c.reply(t)
}

func TestCommandsAnswerLikeRedis(t *testing.T) {
	addr, _ := start(t, "")
	c := dial(t, addr)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"PING"}, "+PONG"},
		{[]string{"ping", "hi"}, "$hi"},
		{[]string{"SET", "k1", "v1"}, "+OK"},
		{[]string{"set", "bin\r\nkey", "bin\x00val"}, "+OK"},
		{[]string{"GET", "bin\r\nkey"}, "$bin\x00val"},
		{[]string{"get", "absent"}, "nil"},
		{[]string{"MSET", "p:1", "a", "p:2", "b", "q:1", "c"}, "+OK"},
		{[]string{"MGET", "p:1", "zz", "p:2"}, "[$a nil $b]"},
		{[]string{"EXISTS", "p:1", "zz", "k1"}, ":2"},
		{[]string{"KEYS", "p:*"}, "[$p:1 $p:2]"},
		{[]string{"KEYS", "p?"}, "-ERR only prefix patterns (prefix*) are supported"},
		{[]string{"SCAN", "0", "MATCH", "p:*", "COUNT", "1"}, "[$1 [$p:1]]"},
		{[]string{"SCAN", "1", "MATCH", "p:*", "COUNT", "1"}, "[$0 [$p:2]]"},
		{[]string{"DBSIZE"}, ":5"},
		{[]string{"DEL", "k1", "zz"}, ":1"},
		{[]string{"CONFIG", "GET", "save"}, "[$save $]"},
		{[]string{"COMMAND"}, "[]"},
		{[]string{"NOSUCH"}, "-ERR unknown command 'nosuch'"},
		{[]string{"GET"}, "-ERR wrong number of arguments for 'get' command"},
		{[]string{"FLUSHDB"}, "+OK"},
		{[]string{"DBSIZE"}, ":0"},
	} {
		if got := c.do(t, tc.args...); got != tc.want {
			t.Errorf("%q: got %q, want %q", tc.args, got, tc.want)
		}
	}
}

func TestPipelinedSetsAndGetsAnswerInOrder(t *testing.T) {
	addr, _ := start(t, "")
	c := dial(t, addr)
	var b strings.Builder
	for i := 0; i < 200; i++ {
		b.WriteString(cmd("SET", fmt.Sprintf("k%d", i), fmt.Sprintf("v%d", i)))
	}
	b.WriteString(cmd("PING"))
	for i := 0; i < 200; i++ {
		b.WriteString(cmd("GET", fmt.Sprintf("k%d", i)))
	}
	if _, err := c.c.Write([]byte(b.String())); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 200; i++ {
		if got := c.reply(t); got != "+OK" {
			t.Fatalf("set %d: %q", i, got)
		}
	}
	if got := c.reply(t); got != "+PONG" {
		t.Fatalf("ping: %q", got)
	}
	for i := 0; i < 200; i++ {
		if got := c.reply(t); got != fmt.Sprintf("$v%d", i) {
			t.Fatalf("get %d: %q", i, got)
		}
	}
}

func TestOversizedBulkGetsAnErrorAndTheConnectionSurvives(t *testing.T) {
	addr, kv := start(t, "")
	c := dial(t, addr)
	c.do(t, "SET", "keep", "me")
	if got := c.do(t, "SET", "big", strings.Repeat("x", 2000)); !strings.Contains(got, "exceeds the limit of 1024") {
		t.Fatalf("oversized: %q", got)
	}
	if got := c.do(t, "GET", "keep"); got != "$me" {
		t.Fatalf("after oversized: %q", got)
	}
	if _, ok, _ := kv.Get([]byte("big")); ok {
		t.Fatal("the oversized value was stored")
	}
}

func TestMalformedFramesNeverCrashTheServerOrLoseData(t *testing.T) {
	addr, _ := start(t, "")
	setup := dial(t, addr)
	setup.do(t, "SET", "keep", "me")
	for _, bad := range []string{
		"*-5\r\n",
		"*abc\r\n",
		"*2\r\n$3\r\nGET\r\n$-7\r\n",
		"*2\r\n$3\r\nGET\r\n:5\r\n",
		"*1\r\n$4\r\nPINGxx",
		"*2\r\n$3\r\nSET\r\n$3\r\nab",
		"*1\r\n$99999999999999999999\r\n",
		"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nvX\r\n",
		strings.Repeat("A", 70000) + "\r\n",
		"\x00\x01\x02\xff\r\n",
	} {
		c := dial(t, addr)
		if _, err := c.c.Write([]byte(bad)); err != nil {
			t.Fatal(err)
		}
		if tc, ok := c.c.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		_ = c.c.SetReadDeadline(time.Now().Add(5 * time.Second))
		for {
			if _, err := c.r.ReadString('\n'); err != nil {
				break // the server answered and/or closed; it must not hang
			}
		}
		check := dial(t, addr)
		if got := check.do(t, "GET", "keep"); got != "$me" {
			t.Fatalf("after %q: %q", bad, got)
		}
	}
}

func TestAuthIsRequiredWhenAPasswordIsSet(t *testing.T) {
	addr, _ := start(t, "secret")
	c := dial(t, addr)
	if got := c.do(t, "GET", "k"); !strings.HasPrefix(got, "-NOAUTH") {
		t.Fatalf("before auth: %q", got)
	}
	if got := c.do(t, "AUTH", "wrong"); !strings.HasPrefix(got, "-WRONGPASS") {
		t.Fatalf("wrong password: %q", got)
	}
	if got := c.do(t, "AUTH", "secret"); got != "+OK" {
		t.Fatalf("auth: %q", got)
	}
	if got := c.do(t, "SET", "k", "v"); got != "+OK" {
		t.Fatalf("after auth: %q", got)
	}
}
