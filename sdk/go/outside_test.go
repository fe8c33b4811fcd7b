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
// function. sdk/go/gomod.sh -C builds it offline; what `go mod tidy` would add online, pgx and its
// dependencies, is copied from sdk/go/go.mod.

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
	return block("go.mod"), block("go")
}

// moduleRequirements returns sdk/go/go.mod's requirements as go.mod lines, pgx directly required
// (the program imports pgxpool) and the others indirectly, as `go mod tidy` would write them.
func moduleRequirements(t *testing.T) string {
	t.Helper()
	own, err := os.ReadFile(filepath.Join(repoRoot, "sdk", "go", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, m := range regexp.MustCompile(`(?m)^(?:require)?\s*([a-z0-9-]+\.[a-z.]+/\S+) (v\S+)`).FindAllStringSubmatch(string(own), -1) {
		line := "require " + m[1] + " " + m[2]
		if m[1] != "github.com/jackc/pgx/v4" {
			line += " // indirect"
		}
		lines = append(lines, line)
	}
	if len(lines) < 2 {
		t.Fatalf("sdk/go/go.mod: %d requirements read", len(lines))
	}
	return strings.Join(lines, "\n") + "\n"
}

func TestStartHereOutsideTheRepo(t *testing.T) {
	goMod, goCode := startHereBlocks(t)
	dir := t.TempDir()
	if strings.HasPrefix(dir, repoRoot+string(filepath.Separator)) {
		t.Fatalf("the temporary directory %s is inside the repository", dir)
	}
	// The page's replace line names a checkout next to the program; this one is where it is.
	replace := regexp.MustCompile(`(?m)^replace workhorse => (\S+)$`)
	if n := len(replace.FindAllString(goMod, -1)); n != 1 || strings.Count(goMod, "replace") != 1 {
		t.Fatalf("the walk-through's go.mod has %d replace lines, want one:\n%s", n, goMod)
	}
	checkout, err := filepath.Rel(dir, filepath.Join(repoRoot, "sdk", "go"))
	if err != nil {
		t.Fatal(err)
	}
	goMod = replace.ReplaceAllLiteralString(goMod, "replace workhorse => "+checkout)
	files := map[string]string{
		"go.mod":  goMod + moduleRequirements(t),
		"main.go": fmt.Sprintf(startHereMain, "\t"+strings.ReplaceAll(strings.TrimRight(goCode, "\n"), "\n", "\n\t")+"\n"),
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	build := exec.Command(filepath.Join(repoRoot, "sdk", "go", "gomod.sh"), "-C", dir, "build", "-o", "orders", ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the walk-through outside the repository: %v\n%s\ngo.mod:\n%s", err, out, files["go.mod"])
	}

	// The page's program inserts order 42 and binds the key order:42: clear what an earlier run left
	// (deleting the job deletes its binding).
	pool := newPool(t)
	ctx := context.Background()
	for _, sql := range []string{
		"create table if not exists orders (id integer primary key)",
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
