package workhorse

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v4/pgxpool"
)

// A handler that ignores its context is abandoned AbortGrace after the context is cancelled: the
// worker stops renewing its lease, records the outcome (a timeout, a release on shutdown) and, on
// shutdown, Run returns. The handler's goroutine is left behind.

const workerProcEnv = "WORKHORSE_GO_WORKER_PROC"

// workerProcConfig is what the test hands the worker process (this test binary run again).
type workerProcConfig struct {
	URL             string `json:"url"`
	Queue           string `json:"queue"`
	ShutdownGraceMs int    `json:"shutdownGraceMs"`
	AbortGraceMs    int    `json:"abortGraceMs"`
	SleepMs         int    `json:"sleepMs"`
}

// workerProcess is the worker process: a Worker whose "stubborn" handler sleeps SleepMs ignoring
// its context, run until SIGTERM. It prints "started <job id>" when the handler starts and
// "returned" when Run returns.
func workerProcess(raw string) int {
	var c workerProcConfig
	if err := json.Unmarshal([]byte(raw), &c); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	pool, err := pgxpool.Connect(context.Background(), c.URL)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer pool.Close()
	w, err := NewWorker(pool, WorkerOptions{Queues: []string{c.Queue}, PollInterval: 50 * time.Millisecond,
		ShutdownGrace: time.Duration(c.ShutdownGraceMs) * time.Millisecond, AbortGrace: time.Duration(c.AbortGraceMs) * time.Millisecond,
		Handlers: map[string]Handler{"stubborn": func(_ context.Context, job *ClaimedJob) (any, error) {
			fmt.Println("started", job.ID)
			time.Sleep(time.Duration(c.SleepMs) * time.Millisecond)
			return "finished", nil
		}}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if err := w.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("returned", w.Stats().Released, w.Stats().Abandoned)
	return 0
}

func TestWorkerProcessAbandonsAHandlerIgnoringShutdown(t *testing.T) {
	q, _ := newTestQueue(t)
	ctx := context.Background()
	queue := unique("stubborn")
	id, err := q.Enqueue(ctx, "stubborn", 1, EnqueueOptions{Queue: Ptr(queue)})
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := json.Marshal(workerProcConfig{URL: testURL, Queue: queue, ShutdownGraceMs: 1000, AbortGraceMs: 500, SleepMs: 40_000})
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), workerProcEnv+"="+string(cfg))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{}) // closed when the process has exited; waitErr is then its status
	var waitErr error
	lines := make(chan string, 4)
	go func() {
		s := bufio.NewScanner(stdout)
		for s.Scan() {
			lines <- s.Text()
		}
		close(lines)
		waitErr = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill() // bounded: never leave the process behind
		<-exited
	})
	select {
	case line := <-lines:
		if line != "started "+id {
			t.Fatalf("worker process said %q, want started %s (stderr: %s)", line, id, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the worker process did not start the job (stderr: %s)", stderr.String())
	}
	signaled := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// ShutdownGrace 1 s, then AbortGrace 0.5 s, then the release: Run returns well before the
	// handler's 40 s sleep ends.
	select {
	case line := <-lines:
		if line != "returned 1 1" {
			t.Fatalf("worker process said %q, want \"returned 1 1\" (released 1, abandoned 1)", line)
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("Run had not returned 15 s after SIGTERM (ShutdownGrace 1 s, AbortGrace 0.5 s)")
	}
	took := time.Since(signaled)
	if took < time.Second || took > 10*time.Second {
		t.Fatalf("Run returned %v after SIGTERM, want ShutdownGrace + AbortGrace (1.5 s) and the release", took)
	}
	select {
	case <-exited:
		if waitErr != nil {
			t.Fatalf("worker process: %v (stderr: %s)", waitErr, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the worker process did not exit after Run returned")
	}
	j, err := q.GetJob(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if j.State != "ready" || j.Attempt != 0 {
		t.Fatalf("job is %s at attempt %d, want ready at attempt 0 (released)", j.State, j.Attempt)
	}
	t.Logf("Run returned %v after SIGTERM", took)
}

func TestWorkerAbandonsAHandlerIgnoringItsExecutionTimeout(t *testing.T) {
	q, _ := newTestQueue(t)
	ctx := context.Background()
	queue := unique("wq")
	id, _ := q.Enqueue(ctx, "stubborn", 1, EnqueueOptions{Queue: Ptr(queue), MaxAttempts: Ptr(1), ExecutionTimeout: Ptr(time.Second)})
	hold := make(chan struct{})
	returned := make(chan struct{})
	w, stop := runWorker(t, WorkerOptions{Queues: []string{queue}, Lease: 600 * time.Millisecond, AbortGrace: 300 * time.Millisecond,
		Handlers: map[string]Handler{
			"stubborn": func(context.Context, *ClaimedJob) (any, error) {
				defer close(returned)
				<-hold // ignores its context
				return "too late", nil
			},
		}})
	// Runs before runWorker's stop (cleanups run last first): the left-behind goroutine ends with the test.
	t.Cleanup(func() { close(hold); <-returned })
	started := time.Now()
	j := waitForState(t, q, id, "failed")
	if took := time.Since(started); took > 8*time.Second {
		t.Fatalf("recorded after %v, want about the timeout (1 s) + AbortGrace (0.3 s)", took)
	}
	var e struct{ Name, Code string }
	_ = json.Unmarshal(j.LastError, &e)
	if e.Name != "ExecutionTimeoutError" || e.Code != "EXECUTION_TIMED_OUT" {
		t.Fatalf("last error %s", j.LastError)
	}
	// The worker no longer holds (nor heartbeats) the abandoned attempt.
	w.mu.Lock()
	held := len(w.running)
	w.mu.Unlock()
	if held != 0 {
		t.Fatalf("the worker still holds %d attempts", held)
	}
	select {
	case <-returned:
		t.Fatal("the handler returned: the test did not exercise a handler that ignores its context")
	default:
	}
	stop() // Run returns while the abandoned handler still runs
	if s := w.Stats(); s.Abandoned != 1 || s.Failed != 1 {
		t.Fatalf("stats %+v", s)
	}
}
