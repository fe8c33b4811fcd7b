package workhorse

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// The invoice example (examples/invoice) runs against the test database and prints the four steps
// of `npm run example`: accepted, replayed, the conflict naming $.amountCents, the binding.
func TestInvoiceExample(t *testing.T) {
	cmd := exec.Command("go", "run", "workhorse/examples/invoice")
	cmd.Env = append(os.Environ(), "DATABASE_URL="+testURL)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	text := string(out)
	for _, want := range []string{"accepted job", "replayed job", "fields [payload], payload paths [$.amountCents]", "4. the binding:"} {
		if !strings.Contains(text, want) {
			t.Fatalf("the example's output lacks %q:\n%s", want, text)
		}
	}
	t.Log("\n" + text)
}
