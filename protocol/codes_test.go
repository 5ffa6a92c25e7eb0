package protocol

import (
	"bufio"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// seedCodes are the required codes of the worker contract, in the order
// its "result and error model" section lists them.
var seedCodes = []Code{
	"invalid_job", "unsupported_profile", "unsupported_limit", "unsupported_state",
	"unsupported_secret", "budget_exhausted", "deadline_exceeded", "memory_exhausted",
	"artifact_too_large", "execution_failed", "proof_rejected", "claim_mismatch",
	"stale_state", "cancelled", "io_error", "internal_error",
}

// TestErrorTableHasEveryContractCodeOnce: the table holds every code
// once, the contract's exactly as the seed lists them, and each row's
// values are ones its boundaries can carry.
func TestErrorTableHasEveryContractCodeOnce(t *testing.T) {
	if got := ContractCodes(); !slices.Equal(got, seedCodes) {
		t.Errorf("contract codes %v, want the seed's %v", got, seedCodes)
	}
	exits := []int{ExitFailed, ExitUsage, ExitUnsupported, ExitUnavailable, ExitRejected, ExitStoreDamaged, ExitCancelled}
	seen := map[Code]bool{}
	for _, s := range CodeSpecs() {
		if seen[s.Code] {
			t.Errorf("%s: in the table twice", s.Code)
		}
		seen[s.Code] = true
		if got, ok := LookupCode(s.Code); !ok || got != s {
			t.Errorf("LookupCode(%s) = %+v, %v", s.Code, got, ok)
		}
		switch s.Scope {
		case ScopeContract, ScopeAPI:
			if s.HTTP < 400 || s.HTTP > 599 || http.StatusText(s.HTTP) == "" {
				t.Errorf("%s: HTTP %d is no error status", s.Code, s.HTTP)
			}
		case ScopeCLI:
			if s.HTTP != 0 {
				t.Errorf("%s: a CLI code with HTTP %d", s.Code, s.HTTP)
			}
		default:
			t.Errorf("%s: scope %d", s.Code, s.Scope)
		}
		if !slices.Contains(exits, s.Exit) {
			t.Errorf("%s: exit %d is no failure status", s.Code, s.Exit)
		}
		if s.Code.Known() != (s.Scope == ScopeContract) {
			t.Errorf("%s: Known() = %v in scope %d", s.Code, s.Code.Known(), s.Scope)
		}
		if s.Code.Retryable() != s.Retryable || Errorf(s.Code, "x").Retryable != s.Retryable ||
			ExitCode(s.Code) != s.Exit || (s.HTTP != 0 && s.Code.HTTPStatus() != s.HTTP) {
			t.Errorf("%s: the accessors disagree with the row %+v", s.Code, s)
		}
	}
	// The sentinels state the retry hint once more (they are plain
	// values, so that errors.Is costs nothing): it must be the table's.
	for _, e := range []*Error{ErrInvalidJob, ErrUnsupportedProfile, ErrUnsupportedLimit, ErrUnsupportedState,
		ErrUnsupportedSecret, ErrBudgetExhausted, ErrDeadlineExceeded, ErrMemoryExhausted, ErrArtifactTooLarge,
		ErrExecutionFailed, ErrProofRejected, ErrClaimMismatch, ErrStaleState, ErrCancelled, ErrIOError, ErrInternalError} {
		if !e.Code.Known() || e.Retryable != e.Code.Retryable() {
			t.Errorf("sentinel %s: retryable %v, the table says %v", e.Code, e.Retryable, e.Code.Retryable())
		}
	}
	if Code("nope").HTTPStatus() != 500 || CodeUsage.HTTPStatus() != 500 || ExitCode("nope") != ExitFailed || Code("nope").Retryable() {
		t.Error("a code outside the table is not an internal failure")
	}
}

// TestErrorTableMatchesDocs: docs/errors.md's table is the code's: the
// same codes, each once, with the same scope, HTTP status, exit status
// and retry hint.
func TestErrorTableMatchesDocs(t *testing.T) {
	f, err := os.Open(filepath.Join("..", "docs", "errors.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	scopes := map[string]Scope{"contract": ScopeContract, "API": ScopeAPI, "CLI": ScopeCLI}
	documented := map[Code]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		if len(cells) != 6 {
			t.Errorf("row %q: %d cells, want 6", line, len(cells))
			continue
		}
		c := Code(strings.Trim(cells[0], "`"))
		if documented[c] {
			t.Errorf("%s: documented twice", c)
		}
		documented[c] = true
		s, ok := LookupCode(c)
		if !ok {
			t.Errorf("%s: documented, not in the table", c)
			continue
		}
		status := 0
		if cells[2] != "—" {
			if status, err = strconv.Atoi(cells[2]); err != nil {
				t.Errorf("%s: HTTP %q", c, cells[2])
			}
		}
		exit, err := strconv.Atoi(cells[3])
		if err != nil {
			t.Errorf("%s: exit %q", c, cells[3])
		}
		retry := map[string]bool{"yes": true, "no": false}
		r, rok := retry[cells[4]]
		sco, sok := scopes[cells[1]]
		if !sok || sco != s.Scope || status != s.HTTP || exit != s.Exit || !rok || r != s.Retryable {
			t.Errorf("%s: docs say %v, the table %+v", c, cells[1:5], s)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	for _, s := range CodeSpecs() {
		if !documented[s.Code] {
			t.Errorf("%s: in the table, not in docs/errors.md", s.Code)
		}
	}
}

// TestCodesAreDeclaredOnlyInTheTable: no Go file of the module but
// codes.go makes a code out of a string literal (a constant or variable
// of type Code, a conversion Code("..."), a field Code: "..."), so every
// code is in the one table and nowhere else.
func TestCodesAreDeclaredOnlyInTheTable(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	isCodeType := func(e ast.Expr) bool {
		switch e := e.(type) {
		case *ast.Ident:
			return e.Name == "Code"
		case *ast.SelectorExpr:
			x, ok := e.X.(*ast.Ident)
			return ok && x.Name == "protocol" && e.Sel.Name == "Code"
		}
		return false
	}
	isString := func(e ast.Expr) bool {
		b, ok := e.(*ast.BasicLit)
		return ok && b.Kind == token.STRING
	}
	fset := token.NewFileSet()
	files := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != root && (strings.HasPrefix(n, ".") || n == "testdata" || n == "bin") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || path == filepath.Join(root, "protocol", "codes.go") {
			return nil
		}
		file, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files++
		ast.Inspect(file, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.ValueSpec:
				if n.Type != nil && isCodeType(n.Type) && len(n.Values) > 0 {
					t.Errorf("%s: declares a code (%s): declare it in protocol/codes.go", fset.Position(n.Pos()), n.Names[0].Name)
				}
			case *ast.CallExpr:
				if len(n.Args) == 1 && isCodeType(n.Fun) && isString(n.Args[0]) {
					t.Errorf("%s: makes a code of a literal: use protocol/codes.go's", fset.Position(n.Pos()))
				}
			case *ast.KeyValueExpr:
				if k, ok := n.Key.(*ast.Ident); ok && k.Name == "Code" && isString(n.Value) {
					t.Errorf("%s: a Code field of a literal: use protocol/codes.go's", fset.Position(n.Pos()))
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("read %d Go files under %s: not the module", files, root)
	}
}
