package workhorse

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// Every Go block of docs/clients-go.md (but "Start here", which TestStartHereOutsideTheRepo runs
// with its own checks) and of sdk/go/README.md, as written: each is the body of a
// func(ctx context.Context, pool *pgxpool.Pool, queue *workhorse.Queue) error in a program of its
// own module outside the repository, built by the page's offline commands and run against the test
// database. A block returns nil when it is done; a worker's block runs until its context (3 s) ends.

const blocksMain = `package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/jackc/pgx/v4/pgxpool"

	"workhorse"
)

var (
	_ = errors.As
	_ = json.Marshal
	_ = time.Second
)

%s
var blocks = []struct {
	name string
	run  func(ctx context.Context, pool *pgxpool.Pool, queue *workhorse.Queue) error
}{
%s}

func main() {
	ctx := context.Background()
	pool, err := pgxpool.Connect(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		fail(err)
	}
	defer pool.Close()
	queue, err := workhorse.NewQueue(pool)
	if err != nil {
		fail(err)
	}
	defer queue.Close()
	for _, b := range blocks {
		limit, cancel := context.WithTimeout(ctx, 3*time.Second)
		err := b.run(limit, pool, queue)
		cancel()
		if err != nil {
			fail(fmt.Errorf("%%s: %%w", b.name, err))
		}
		fmt.Println("ran", b.name)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}
`

// goBlocks returns a page's Go blocks, named "<page> Go block <n>", leaving out the section
// headed skip ("" keeps all).
func goBlocks(t *testing.T, page, skip string) (names, bodies []string) {
	t.Helper()
	text, err := os.ReadFile(filepath.Join(repoRoot, page))
	if err != nil {
		t.Fatal(err)
	}
	s := string(text)
	if skip != "" {
		before, rest, ok := strings.Cut(s, "\n## "+skip+"\n")
		if !ok {
			t.Fatalf("%s has no %q section", page, skip)
		}
		_, after, _ := strings.Cut(rest, "\n## ")
		s = before + "\n## " + after
	}
	for i, m := range regexp.MustCompile("(?s)```go\n(.*?)```").FindAllStringSubmatch(s, -1) {
		names = append(names, fmt.Sprintf("%s Go block %d", page, i+1))
		bodies = append(bodies, m[1])
	}
	return names, bodies
}

func TestEveryGoBlockRuns(t *testing.T) {
	var names, bodies []string
	for _, p := range []struct{ page, skip string }{{"docs/clients-go.md", "Start here"}, {"sdk/go/README.md", ""}} {
		n, b := goBlocks(t, p.page, p.skip)
		if len(n) == 0 {
			t.Fatalf("%s has no Go block", p.page)
		}
		names, bodies = append(names, n...), append(bodies, b...)
	}
	var funcs, table strings.Builder
	for i, body := range bodies {
		fmt.Fprintf(&funcs, "// %s, as written.\nfunc block%d(ctx context.Context, pool *pgxpool.Pool, queue *workhorse.Queue) error {\n\t%s\n}\n\n",
			names[i], i, strings.ReplaceAll(strings.TrimRight(body, "\n"), "\n", "\n\t"))
		fmt.Fprintf(&table, "\t{%q, block%d},\n", names[i], i)
	}
	dir := userModule(t, fmt.Sprintf(blocksMain, funcs.String(), table.String()))
	limit, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run := exec.CommandContext(limit, filepath.Join(dir, "orders"))
	run.Dir = dir
	run.Env = append(os.Environ(), "DATABASE_URL="+testURL)
	out, err := run.CombinedOutput()
	if err != nil {
		t.Fatalf("the docs' Go blocks: %v\n%s", err, out)
	}
	if got := strings.Count(string(out), "ran "); got != len(bodies) {
		t.Fatalf("%d of %d blocks ran:\n%s", got, len(bodies), out)
	}
}
