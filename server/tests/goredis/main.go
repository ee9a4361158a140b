// Command goredis drives sett-server through go-redis. With one argument it
// drives three cluster nodes through ClusterClient: it discovers the slots,
// routes keys, follows MOVED, and runs a pipeline across nodes. With
// "failover" it writes through a Sentinel failover (failover.go), and with
// "replicas" it reads from cluster replicas (replicas.go).
//
// Usage: go run . HOST:PORT | go run . failover SENTINEL_PORTS MASTER_PID |
// go run . replicas HOST:PORT
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

func main() {
	if len(os.Args) == 4 && os.Args[1] == "failover" {
		if err := failover(os.Args[2], os.Args[3]); err != nil {
			fmt.Fprintln(os.Stderr, "go-redis FailoverClient:", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) == 3 && os.Args[1] == "replicas" {
		if err := replicas(os.Args[2]); err != nil {
			fmt.Fprintln(os.Stderr, "go-redis ClusterClient ReadOnly:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "go-redis ClusterClient:", err)
		os.Exit(1)
	}
	fmt.Println("go-redis ClusterClient: ok")
}

func run(addr string) error {
	ctx := context.Background()
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{addr}})
	defer c.Close()
	for i := 0; i < 300; i++ {
		if err := c.Set(ctx, fmt.Sprintf("go:%d", i), i, 0).Err(); err != nil {
			return fmt.Errorf("SET go:%d: %w", i, err)
		}
	}
	// A pipeline whose commands go to all three nodes.
	pipe := c.Pipeline()
	gets := make([]*redis.StringCmd, 300)
	for i := range gets {
		gets[i] = pipe.Get(ctx, fmt.Sprintf("go:%d", i))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("pipeline: %w", err)
	}
	for i, g := range gets {
		if v, err := g.Int(); err != nil || v != i {
			return fmt.Errorf("GET go:%d = %v, %v", i, v, err)
		}
	}
	if v, err := c.IncrBy(ctx, "{go}n", 5).Result(); err != nil || v != 5 {
		return fmt.Errorf("INCRBY: %v, %v", v, err)
	}
	if err := c.MSet(ctx, "{go}a", "1", "{go}b", "2").Err(); err != nil {
		return fmt.Errorf("MSET with a hash tag: %w", err)
	}
	err := c.MSet(ctx, "{go}a", "1", "other", "2").Err()
	if err == nil || !strings.HasPrefix(err.Error(), "CROSSSLOT") {
		return fmt.Errorf("MSET over two slots: want CROSSSLOT, got %v", err)
	}
	// ForEachMaster calls the function on one goroutine per master, at once.
	var (
		mu  sync.Mutex
		per []int64
	)
	err = c.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
		size, err := n.DBSize(ctx).Result()
		mu.Lock()
		per = append(per, size)
		mu.Unlock()
		return err
	})
	if err != nil {
		return err
	}
	var total int64
	for _, n := range per {
		if n < 50 {
			return fmt.Errorf("a node holds only %d keys: %v", n, per)
		}
		total += n
	}
	if len(per) != 3 || total != 303 {
		return errors.New(fmt.Sprint("keys per node: ", per))
	}
	return nil
}
