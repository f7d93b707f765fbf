package neuronmem

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The public headers whose every function this package binds; a header added later is bound (and listed here)
// in its own change.
var coveredHeaders = []string{"status.h", "client.h", "buffer.h", "manifest.h", "executable.h"}

// Every function the covered installed headers declare is called by this package (in Go or in helpers.c).
func TestEveryPublicFunctionIsBound(t *testing.T) {
	out, err := exec.Command("pkg-config", "--variable=includedir", "neuronmem").Output()
	if err != nil {
		t.Fatal("pkg-config: ", err)
	}
	var headers []string
	for _, h := range coveredHeaders {
		headers = append(headers, filepath.Join(strings.TrimSpace(string(out)), "neuronmem", h))
	}
	decl := regexp.MustCompile(`NEURONMEM_API[^;(]*?\b(neuronmem_\w+)\s*\(`)
	var src strings.Builder
	files, _ := filepath.Glob("*.go")
	cfiles, _ := filepath.Glob("*.c")
	for _, f := range append(files, cfiles...) {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		src.Write(b)
	}
	code := src.String()
	n := 0
	for _, h := range headers {
		b, err := os.ReadFile(h)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range decl.FindAllStringSubmatch(string(b), -1) {
			n++
			if !strings.Contains(code, "C."+m[1]+"(") && !strings.Contains(code, m[1]+"(") {
				t.Errorf("%s (%s) has no binding", m[1], filepath.Base(h))
			}
		}
	}
	if n < 60 {
		t.Fatalf("only %d declarations found", n)
	}
}
