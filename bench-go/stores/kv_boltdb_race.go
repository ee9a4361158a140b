//go:build race

package stores

import "errors"

// boltdbRaceWhy is why bolt is not in a race-detector build: -race turns on
// Go's checkptr, and bolt v1.3.1 converts pointers in ways it rejects (it
// makes a page header out of the tail of a shorter byte slice, for one; bbolt
// fixed these after Go 1.14 began to check them). The runs of the benchmark
// are plain builds, which have it.
const boltdbRaceWhy = "not in race-detector builds: bolt v1.3.1 fails Go's checkptr, which -race turns on " +
	"(\"converted pointer straddles multiple allocations\" in Bucket.write); plain builds have it"

const boltdbBuilt = false

func openBoltdbKV(string, KVOptions) (KV, error) { return nil, errors.New("bolt: " + boltdbRaceWhy) }
