package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// replicas writes through a ClusterClient with ReadOnly set, waits until every
// master's replica has the writes (WAIT 1), reads them back, and checks from
// the nodes' own counters that the replicas served every read.
func replicas(addr string) error {
	ctx := context.Background()
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{addr}, ReadOnly: true})
	defer c.Close()
	const n = 300
	for i := 0; i < n; i++ {
		if err := c.Set(ctx, fmt.Sprintf("ro:%d", i), i, 0).Err(); err != nil {
			return fmt.Errorf("SET ro:%d: %w", i, err)
		}
	}
	err := c.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		got, err := m.Do(ctx, "WAIT", 1, 10000).Int()
		if err == nil && got != 1 {
			err = fmt.Errorf("WAIT 1 on %s counted %d replicas", m.Options().Addr, got)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("WAIT: %w", err)
	}
	for i := 0; i < n; i++ {
		if v, err := c.Get(ctx, fmt.Sprintf("ro:%d", i)).Int(); err != nil || v != i {
			return fmt.Errorf("GET ro:%d = %v, %v", i, v, err)
		}
	}
	masters, err := hits(ctx, c.ForEachMaster)
	if err != nil {
		return err
	}
	slaves, err := hits(ctx, c.ForEachSlave)
	if err != nil {
		return err
	}
	var total int64
	for _, h := range slaves {
		total += h
	}
	if len(masters) != 3 || len(slaves) != 3 || total != n {
		return fmt.Errorf("keyspace hits: masters %v, replicas %v; want 0s and %d in all", masters, slaves, n)
	}
	for _, h := range masters {
		if h != 0 {
			return fmt.Errorf("a master served reads: masters %v, replicas %v", masters, slaves)
		}
	}
	fmt.Println("go-redis ClusterClient ReadOnly: ok, replica hits", slaves)
	return nil
}

// hits reads keyspace_hits from INFO stats of each node that each visits.
func hits(ctx context.Context, each func(context.Context, func(context.Context, *redis.Client) error) error) ([]int64, error) {
	var (
		mu  sync.Mutex
		out []int64
	)
	err := each(ctx, func(ctx context.Context, node *redis.Client) error {
		info, err := node.Info(ctx, "stats").Result()
		if err != nil {
			return err
		}
		for _, line := range strings.Split(info, "\r\n") {
			if v, ok := strings.CutPrefix(line, "keyspace_hits:"); ok {
				h, err := strconv.ParseInt(v, 10, 64)
				mu.Lock()
				out = append(out, h)
				mu.Unlock()
				return err
			}
		}
		return fmt.Errorf("no keyspace_hits in INFO stats of %s", node.Options().Addr)
	})
	return out, err
}
