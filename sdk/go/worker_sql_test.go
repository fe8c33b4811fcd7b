package workhorse

import (
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// Every worker statement calls its SQL function with the conformance file's argument types, in
// order, and selects only that function's result columns; every worker function in the file is called.
func TestConformanceWorkerCalls(t *testing.T) {
	f := loadConformance(t)
	statements := map[string]string{
		"sqlClaimJobs": sqlClaimJobs, "sqlReadCheckpoint": sqlReadCheckpoint, "sqlSaveCheckpoint": sqlSaveCheckpoint,
		"sqlHeartbeatJobs": sqlHeartbeatJobs, "sqlReleaseJobs": sqlReleaseJobs, "sqlCancelAttempt": sqlCancelAttempt,
		"sqlCompleteJobs": sqlCompleteJobs, "sqlFailJob": sqlFailJob,
	}
	call := regexp.MustCompile(`(?s)from (workhorse\.\w+)\((.*?)\)`)
	cast := regexp.MustCompile(`\$\d+::([\w\[\]]+)`)
	selected := regexp.MustCompile(`(?s)^\s*select (.*?)\s+from `)
	seen := map[string]bool{}
	for name, sql := range statements {
		m := call.FindStringSubmatch(sql)
		if m == nil {
			continue // not a function call (the checkpoint read from its table)
		}
		var want *struct {
			args    []string
			columns map[string]bool
		}
		for _, c := range f.WorkerCalls {
			if c.Function == m[1] {
				cols := map[string]bool{}
				for _, col := range c.Columns {
					cols[col.Name] = true
				}
				want = &struct {
					args    []string
					columns map[string]bool
				}{c.Args, cols}
			}
		}
		if want == nil {
			t.Errorf("%s calls %s, which the conformance file does not list", name, m[1])
			continue
		}
		seen[m[1]] = true
		var args []string
		for _, a := range cast.FindAllStringSubmatch(m[2], -1) {
			args = append(args, a[1])
		}
		if !reflect.DeepEqual(args, want.args) {
			t.Errorf("%s: argument types %v, the file says %v", name, args, want.args)
		}
		sel := selected.FindStringSubmatch(sql)
		if sel == nil {
			t.Fatalf("%s: no select list", name)
		}
		for _, item := range strings.Split(sel[1], ",") {
			col := strings.SplitN(strings.TrimSpace(item), "::", 2)[0]
			if !want.columns[col] {
				t.Errorf("%s selects %q, not a result column of %s", name, col, m[1])
			}
		}
	}
	if len(seen) != len(f.WorkerCalls) {
		t.Errorf("the worker calls %d of the file's %d worker functions: %v", len(seen), len(f.WorkerCalls), seen)
	}
}
