package workhorse

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v4/pgxpool"
)

// The tests run against a real PostgreSQL: DATABASE_URL when set, else a throwaway Debian
// PostgreSQL 15 (initdb + pg_ctl in a temp directory, on a free port) started here. The schema is
// made by `npx workhorse migrate` in the checkout, the command the docs give (on Citus by
// testdata/migrate.ts, which makes the Citus database first).

var (
	testURL   string
	pgDataDir string // set when this process owns the server (the restart test needs it)
	pgBin     = "/usr/lib/postgresql/15/bin"
	repoRoot  string
)

func TestMain(m *testing.M) {
	if cfg := os.Getenv(workerProcEnv); cfg != "" {
		os.Exit(workerProcess(cfg)) // this binary run again as a worker process (worker_abandon_test.go)
	}
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	_, file, _, _ := runtime.Caller(0)
	// file is <repo>/sdk/go/main_test.go (unless built with -trimpath: then the cwd, sdk/go, is used).
	for _, dir := range []string{filepath.Dir(file), mustCwd()} {
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			dir = real
		}
		if root, err := filepath.Abs(filepath.Join(dir, "..", "..")); err == nil {
			if _, err := os.Stat(filepath.Join(root, "lib", "enqueue", "index.ts")); err == nil {
				repoRoot = root
				break
			}
		}
	}
	if repoRoot == "" {
		if r := os.Getenv("WORKHORSE_REPO"); r != "" {
			repoRoot = r
		} else {
			fmt.Fprintln(os.Stderr, "cannot find the repository root (set WORKHORSE_REPO)")
			return 2
		}
	}
	testURL = os.Getenv("DATABASE_URL")
	if testURL == "" {
		stop, err := startPostgres()
		if err != nil {
			fmt.Fprintln(os.Stderr, "starting PostgreSQL 15:", err)
			return 2
		}
		defer stop()
	}
	// The schema by the docs' one command, `npx workhorse migrate`; on Citus the helper makes the
	// Citus database first, then lays the schema out distributed.
	migrate := exec.Command("npx", "workhorse", "migrate")
	if os.Getenv("WORKHORSE_DISTRIBUTED") == "1" {
		migrate = exec.Command("npx", "tsx", "sdk/go/testdata/migrate.ts")
	}
	migrate.Dir = repoRoot
	migrate.Env = append(os.Environ(), "DATABASE_URL="+testURL)
	if out, err := migrate.CombinedOutput(); err != nil {
		fmt.Fprintln(os.Stderr, "migrate:", err, string(out))
		return 2
	}
	// The package's Example functions connect as a user's program would: through DATABASE_URL.
	os.Setenv("DATABASE_URL", testURL)
	return m.Run()
}

func mustCwd() string {
	d, _ := os.Getwd()
	if pwd := os.Getenv("PWD"); pwd != "" {
		d = pwd
	}
	return d
}

// tsx runs a TypeScript file of the repository with DATABASE_URL set to the test database.
func tsx(script string, args ...string) (string, error) {
	cmd := exec.Command("npx", append([]string{"tsx", script}, args...)...)
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), "DATABASE_URL="+testURL)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// asPostgres runs a PostgreSQL binary, as the postgres user when this process is root.
func asPostgres(args ...string) (string, error) {
	var cmd *exec.Cmd
	if u, _ := user.Current(); u != nil && u.Uid == "0" {
		quoted := make([]string, len(args))
		for i, a := range args {
			quoted[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		cmd = exec.Command("su", "postgres", "-c", strings.Join(quoted, " "))
	} else {
		cmd = exec.Command(args[0], args[1:]...)
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func startPostgres() (func(), error) {
	dir, err := os.MkdirTemp("", "workhorse-go-pg-")
	if err != nil {
		return nil, err
	}
	if u, _ := user.Current(); u != nil && u.Uid == "0" {
		if out, err := exec.Command("chown", "postgres", dir).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("chown: %v %s", err, out)
		}
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	pgDataDir = filepath.Join(dir, "data")
	if out, err := asPostgres(pgBin+"/initdb", "-D", pgDataDir, "-A", "trust", "-U", "postgres", "--no-sync"); err != nil {
		return nil, fmt.Errorf("initdb: %v %s", err, out)
	}
	opts := fmt.Sprintf("-p %d -c listen_addresses=127.0.0.1 -c unix_socket_directories=%s -c fsync=off -c max_connections=100", port, dir)
	if out, err := asPostgres(pgBin+"/pg_ctl", "-D", pgDataDir, "-w", "-l", filepath.Join(dir, "log"), "-o", opts, "start"); err != nil {
		return nil, fmt.Errorf("pg_ctl start: %v %s", err, out)
	}
	testURL = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
	return func() {
		_, _ = asPostgres(pgBin+"/pg_ctl", "-D", pgDataDir, "-m", "immediate", "stop")
		_ = os.RemoveAll(dir)
	}, nil
}

// restartPostgres restarts the test server (fast shutdown: every connection is cut).
func restartPostgres(t *testing.T) {
	t.Helper()
	// -l: the restarted server must not inherit this command's output pipe (CombinedOutput would wait for it).
	log := filepath.Join(filepath.Dir(pgDataDir), "log")
	if out, err := asPostgres(pgBin+"/pg_ctl", "-D", pgDataDir, "-m", "fast", "-w", "-l", log, "restart"); err != nil {
		t.Fatalf("pg_ctl restart: %v %s", err, out)
	}
}

func newPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(testURL)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 8
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pool, err := pgxpool.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

func newTestQueue(t *testing.T, options ...Option) (*Queue, *pgxpool.Pool) {
	t.Helper()
	pool := newPool(t)
	q, err := NewQueue(pool, options...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(q.Close)
	return q, pool
}

// unique makes keys and names that no other test (or earlier run on the same server) uses.
func unique(prefix string) string {
	return fmt.Sprintf("%s-%d", prefix, time.Now().UnixNano())
}

func countRows(t *testing.T, pool *pgxpool.Pool, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
