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

// docs/clients-go.md's "Start here", built and run as a user's program: a module of its own in a
// temporary directory outside the repository, with the page's go.mod (requiring workhorse v0.0.0,
// its one replace line pointing at this checkout) and the page's Go block as the body of a
// function, built by the page's offline commands (`gomod.sh -C . deps`, then `gomod.sh -C . build`).

const startHereMain = `package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/jackc/pgx/v4/pgxpool"

	"workhorse"
)

// startHere is docs/clients-go.md's "Start here" Go block, as written.
func startHere(ctx context.Context) error {
%s}

// The walk-through's worker runs until its context is cancelled: cancel it once the job is done.
func main() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run, stop := context.WithCancel(ctx)
	returned := make(chan error, 1)
	go func() { returned <- startHere(run) }()

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
	for {
		select {
		case err := <-returned:
			fail(fmt.Errorf("returned before its job succeeded: %%v", err))
		case <-ctx.Done():
			fail(errors.New("its job did not succeed within a minute"))
		case <-time.After(50 * time.Millisecond):
		}
		binding, err := queue.FindBinding(ctx, "order:42", "")
		if err != nil || binding == nil {
			continue
		}
		if job, err := queue.GetJob(ctx, binding.JobID); err == nil && job != nil && job.State == "succeeded" {
			stop()
			if err := <-returned; err != nil {
				fail(err)
			}
			fmt.Println(job.State, string(job.Result))
			return
		}
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}
`

// startHereBlocks returns the "Start here" section's go.mod block and Go block.
func startHereBlocks(t *testing.T) (goMod, goCode string) {
	goMod, goCode, _ = startHereSection(t)
	return goMod, goCode
}

// startHereSection returns the "Start here" section's go.mod block, Go block, and the gomod.sh
// command lines of its sh blocks (comments dropped).
func startHereSection(t *testing.T) (goMod, goCode string, gomod [][]string) {
	t.Helper()
	page, err := os.ReadFile(filepath.Join(repoRoot, "docs", "clients-go.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(page), "\n## Start here\n")
	if !ok {
		t.Fatal(`docs/clients-go.md has no "## Start here" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	block := func(lang string) string {
		blocks := regexp.MustCompile("(?s)```"+regexp.QuoteMeta(lang)+"\n(.*?)```").FindAllStringSubmatch(section, -1)
		if len(blocks) != 1 {
			t.Fatalf("the walk-through has %d %s blocks, want 1", len(blocks), lang)
		}
		return blocks[0][1]
	}
	for _, sh := range regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(section, -1) {
		for _, line := range strings.Split(sh[1], "\n") {
			line, _, _ = strings.Cut(line, "#")
			if f := strings.Fields(line); len(f) > 0 && strings.HasSuffix(f[0], "/sdk/go/gomod.sh") {
				gomod = append(gomod, f)
			}
		}
	}
	return block("go.mod"), block("go"), gomod
}

// userModule writes a module of its own outside the repository, with the walk-through's go.mod (its
// replace line pointing at this checkout) and the given main.go, and builds it into dir/orders with
// the page's gomod.sh commands as written. It returns the directory.
func userModule(t *testing.T, mainGo string) string {
	t.Helper()
	goMod, _, commands := startHereSection(t)
	dir := t.TempDir()
	if strings.HasPrefix(dir, repoRoot+string(filepath.Separator)) {
		t.Fatalf("the temporary directory %s is inside the repository", dir)
	}
	replace := regexp.MustCompile(`(?m)^replace workhorse => (\S+)$`)
	if n := len(replace.FindAllString(goMod, -1)); n != 1 || strings.Count(goMod, "replace") != 1 {
		t.Fatalf("the walk-through's go.mod has %d replace lines, want one:\n%s", n, goMod)
	}
	checkout, err := filepath.Rel(dir, filepath.Join(repoRoot, "sdk", "go"))
	if err != nil {
		t.Fatal(err)
	}
	goMod = replace.ReplaceAllLiteralString(goMod, "replace workhorse => "+checkout)
	for name, text := range map[string]string{"go.mod": goMod, "main.go": mainGo} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if len(commands) != 2 || commands[0][len(commands[0])-1] != "deps" || !strings.Contains(strings.Join(commands[1], " "), " build ") {
		t.Fatalf("the walk-through's offline commands are %v, want gomod.sh -C . deps, then gomod.sh -C . build", commands)
	}
	for _, c := range commands {
		cmd := exec.Command(filepath.Join(repoRoot, "sdk", "go", "gomod.sh"), c[1:]...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			written, _ := os.ReadFile(filepath.Join(dir, "go.mod"))
			t.Fatalf("%v in a module outside the repository: %v\n%s\ngo.mod:\n%s", c, err, out, written)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "orders")); err != nil {
		t.Fatalf("the page's build command made no ./orders: %v", err)
	}
	return dir
}

func TestStartHereOutsideTheRepo(t *testing.T) {
	_, goCode := startHereBlocks(t)
	dir := userModule(t, fmt.Sprintf(startHereMain, "\t"+strings.ReplaceAll(strings.TrimRight(goCode, "\n"), "\n", "\n\t")+"\n"))

	// The page's program inserts order 42 and binds the key order:42: clear what an earlier run left
	// (deleting the job deletes its binding).
	pool := newPool(t)
	ctx := context.Background()
	for _, sql := range []string{
		"create table if not exists orders (id bigint primary key)",
		"delete from orders where id = 42",
		`delete from workhorse.job where type = 'order.place' and payload = '{"order": 42}'::jsonb`,
	} {
		if _, err := pool.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	limit, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	run := exec.CommandContext(limit, filepath.Join(dir, "orders"))
	run.Dir = dir
	run.Env = append(os.Environ(), "DATABASE_URL="+testURL)
	var stderr strings.Builder
	run.Stderr = &stderr
	out, err := run.Output()
	if err != nil {
		t.Fatalf("the walk-through: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr.String())
	}
	want := "true true\n[payload] [$.order]\nsucceeded {\"placed\": true}\n"
	if string(out) != want {
		t.Fatalf("the walk-through printed\n%s\nwant\n%s\nstderr:\n%s", out, want, stderr.String())
	}
	if countRows(t, pool, "select count(*) from orders where id = 42") != 1 {
		t.Fatal("the walk-through's order is not stored")
	}
}
