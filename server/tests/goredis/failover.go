package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// failover drives a sett-server master with two replicas through go-redis's
// FailoverClient: 100 writes acknowledged by WAIT 1, SIGKILL of the master
// (pid), then 100 more acknowledged writes once Sentinel has promoted a
// replica, and every acknowledged write read back from the new master.
func failover(sentinelPorts string, pid string) error {
	ctx := context.Background()
	var addrs []string
	for _, p := range strings.Split(sentinelPorts, ",") {
		addrs = append(addrs, "127.0.0.1:"+p)
	}
	victim, err := strconv.Atoi(pid)
	if err != nil {
		return fmt.Errorf("pid %q: %w", pid, err)
	}
	c := redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName:    "m",
		SentinelAddrs: addrs,
		DialTimeout:   time.Second,
		ReadTimeout:   3 * time.Second,
		WriteTimeout:  3 * time.Second,
	})
	defer c.Close()
	s := redis.NewSentinelClient(&redis.Options{Addr: addrs[0]})
	defer s.Close()
	first, err := s.GetMasterAddrByName(ctx, "m").Result()
	if err != nil {
		return fmt.Errorf("asking a sentinel for the master: %w", err)
	}

	// write sets go:i and waits for one replica; it retries for up to
	// `patience` while the master is gone or not yet replaced.
	write := func(i int, patience time.Duration) (int64, error) {
		deadline := time.Now().Add(patience)
		for {
			err := c.Set(ctx, fmt.Sprintf("go:%d", i), fmt.Sprintf("v%d", i), 0).Err()
			var n int64
			if err == nil {
				n, err = c.Do(ctx, "WAIT", 1, 1000).Int64()
			}
			if err == nil {
				return n, nil
			}
			if time.Now().After(deadline) {
				return 0, fmt.Errorf("SET go:%d: %w", i, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	var acked []int
	for i := 0; i < 100; i++ {
		n, err := write(i, 10*time.Second)
		if err != nil {
			return err
		}
		if n < 1 {
			return fmt.Errorf("WAIT 1 after go:%d before the kill: %d", i, n)
		}
		acked = append(acked, i)
	}
	if err := syscall.Kill(victim, syscall.SIGKILL); err != nil {
		return fmt.Errorf("killing the master: %w", err)
	}
	killed := time.Now()
	for i, after := 100, 0; after < 100; i++ {
		n, err := write(i, 60*time.Second)
		if err != nil {
			return err
		}
		if n >= 1 {
			acked = append(acked, i)
			after++
		}
		if time.Since(killed) > 90*time.Second {
			return fmt.Errorf("%d acknowledged writes in 90 s after the kill", after)
		}
	}
	now, err := s.GetMasterAddrByName(ctx, "m").Result()
	if err != nil {
		return fmt.Errorf("asking a sentinel for the new master: %w", err)
	}
	if now[1] == first[1] {
		return errors.New("the sentinels still name the killed master")
	}
	for _, i := range acked {
		v, err := c.Get(ctx, fmt.Sprintf("go:%d", i)).Result()
		if err != nil || v != fmt.Sprintf("v%d", i) {
			return fmt.Errorf("acknowledged go:%d on the new master: %q, %v", i, v, err)
		}
	}
	fmt.Printf("go-redis FailoverClient: ok, master %v -> %v, %d acknowledged writes all there\n", first, now, len(acked))
	return nil
}
