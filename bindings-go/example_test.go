package sett_test

import (
	"bytes"
	"errors"
	"fmt"
	"log"
	"os"

	sett "github.com/sett-db/sett-go"
)

// tempDir is a fresh directory for an example's database.
func tempDir() string {
	dir, err := os.MkdirTemp("", "sett-example-")
	if err != nil {
		log.Fatal(err)
	}
	return dir
}

func Example() {
	dir := tempDir()
	defer os.RemoveAll(dir)
	db, err := sett.Open(dir, &sett.Options{ValueThreshold: 256})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	if err := db.Set([]byte("answer"), []byte("42")); err != nil {
		log.Fatal(err)
	}
	v, err := db.Get([]byte("answer"))
	fmt.Printf("%s %v\n", v, err)
	_, err = db.Get([]byte("question"))
	fmt.Println(errors.Is(err, sett.ErrNotFound))
	// Output:
	// 42 <nil>
	// true
}

func ExampleDB_Update() {
	dir := tempDir()
	defer os.RemoveAll(dir)
	db, err := sett.Open(dir, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	// Move 10 from a to b atomically; a conflict with another writer reruns
	// the function (up to sett.UpdateRetries times).
	_ = db.Set([]byte("a"), []byte("100"))
	_ = db.Set([]byte("b"), []byte("0"))
	err = db.Update(func(txn *sett.Txn) error {
		var a, b int
		va, _ := txn.Get([]byte("a"))
		vb, _ := txn.Get([]byte("b"))
		fmt.Sscan(string(va), &a)
		fmt.Sscan(string(vb), &b)
		if err := txn.Set([]byte("a"), []byte(fmt.Sprint(a-10))); err != nil {
			return err
		}
		return txn.Set([]byte("b"), []byte(fmt.Sprint(b+10)))
	})
	fmt.Println(err)
	_ = db.View(func(txn *sett.Txn) error {
		a, _ := txn.Get([]byte("a"))
		b, _ := txn.Get([]byte("b"))
		fmt.Printf("a=%s b=%s\n", a, b)
		return nil
	})
	// Output:
	// <nil>
	// a=90 b=10
}

func ExampleDB_NewIterator() {
	dir := tempDir()
	defer os.RemoveAll(dir)
	db, err := sett.Open(dir, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	b := db.NewBatch()
	for _, k := range []string{"fruit/apple", "fruit/fig", "fruit/pear", "veg/leek"} {
		_ = b.Set([]byte(k), []byte(fmt.Sprint(len(k))))
	}
	if err := b.Commit(); err != nil {
		log.Fatal(err)
	}
	it, err := db.NewIterator(sett.IteratorOptions{Prefix: []byte("fruit/"), Reverse: true})
	if err != nil {
		log.Fatal(err)
	}
	defer it.Close()
	for ; it.Valid(); it.Next() {
		fmt.Printf("%s=%s\n", it.Key(), it.Value())
	}
	if err := it.Err(); err != nil {
		log.Fatal(err)
	}
	// Output:
	// fruit/pear=10
	// fruit/fig=9
	// fruit/apple=11
}

func ExampleDB_RunValueLogGC() {
	dir := tempDir()
	defer os.RemoveAll(dir)
	// GC by hand: the background GC (on by default) is turned off.
	db, err := sett.Open(dir, &sett.Options{ValueThreshold: 64, MemTableSize: 16 << 10,
		ValueLogFileSize: 16 << 10, ValueLogGCRatio: -1})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	// Overwrite every value three times, then compact: the old values in the
	// value log are garbage.
	for round := 0; round < 4; round++ {
		for i := 0; i < 300; i++ {
			_ = db.Set([]byte(fmt.Sprintf("key%03d", i)), bytes.Repeat([]byte{byte(round)}, 200))
		}
	}
	_ = db.Flatten()
	before, _ := db.Stats()
	for db.RunValueLogGC(0.5) == nil {
	}
	after, _ := db.Stats()
	fmt.Println(after.VlogBytes < before.VlogBytes)
	// Output: true
}

func ExampleDB_Backup() {
	dir, dir2 := tempDir(), tempDir()
	defer os.RemoveAll(dir)
	defer os.RemoveAll(dir2)
	db, err := sett.Open(dir, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	_ = db.Set([]byte("k"), []byte("v"))

	var backup bytes.Buffer // any io.Writer: a file, a network connection
	if _, err := db.Backup(&backup, 0); err != nil {
		log.Fatal(err)
	}

	restored, err := sett.Open(dir2, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer restored.Close()
	n, err := restored.Restore(&backup)
	v, _ := restored.Get([]byte("k"))
	fmt.Println(n, err, string(v))
	// Output: 1 <nil> v
}

func ExampleDB_GetSequence() {
	dir := tempDir()
	defer os.RemoveAll(dir)
	db, err := sett.Open(dir, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	seq, err := db.GetSequence([]byte("order-ids"), 100)
	if err != nil {
		log.Fatal(err)
	}
	defer seq.Release()
	for i := 0; i < 3; i++ {
		id, _ := seq.Next()
		fmt.Println(id)
	}
	// Output:
	// 0
	// 1
	// 2
}

func ExampleNewEntry() {
	dir := tempDir()
	defer os.RemoveAll(dir)
	db, err := sett.Open(dir, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	_ = db.SetEntry(sett.NewEntry([]byte("session"), []byte("token")).WithMeta(1).WithTTL(3600e9))
	item, _ := db.GetItem([]byte("session"))
	fmt.Println(string(item.Value), item.UserMeta, item.ExpiresAt > 0)
	// Output: token 1 true
}

func ExampleOptions_encryptionKey() {
	dir := tempDir()
	defer os.RemoveAll(dir)
	// In a real program the key comes from a key manager, never from code.
	key := bytes.Repeat([]byte{0x5e}, 32)
	db, err := sett.Open(dir, &sett.Options{EncryptionKey: key})
	if err != nil {
		log.Fatal(err)
	}
	if err := db.Set([]byte("secret"), []byte("kept")); err != nil {
		log.Fatal(err)
	}
	if _, err := db.RotateEncryptionKey(); err != nil {
		log.Fatal(err)
	}
	if err := db.Close(); err != nil {
		log.Fatal(err)
	}

	_, err = sett.Open(dir, &sett.Options{EncryptionKey: bytes.Repeat([]byte{0x11}, 32)})
	fmt.Println(errors.Is(err, sett.ErrWrongEncryptionKey))
	_, err = sett.Open(dir, nil)
	fmt.Println(errors.Is(err, sett.ErrEncryptionKeyRequired))

	db, err = sett.Open(dir, &sett.Options{EncryptionKey: key})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	v, err := db.Get([]byte("secret"))
	fmt.Printf("%s %v\n", v, err)
	// Output:
	// true
	// true
	// kept <nil>
}
