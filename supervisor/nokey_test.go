package supervisor

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/internal/testenv"
	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/fencing"
	"github.com/cyberia-to/cyber-supervisor/supervisor/hostact"
	"github.com/cyberia-to/cyber-supervisor/supervisor/launch"
	"github.com/cyberia-to/cyber-supervisor/supervisor/neuron"
)

// secretForms is every way the vault's secret could be written: raw,
// hex either case, base64 either alphabet.
func secretForms(t *testing.T, home string) [][]byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(neuron.VaultDir(home), neuron.KeyFile))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	secret, err := hex.DecodeString(lines[len(lines)-1])
	if err != nil || len(secret) != 32 {
		t.Fatalf("vault secret: %v", err)
	}
	h := hex.EncodeToString(secret)
	return [][]byte{secret, []byte(h), []byte(strings.ToUpper(h)),
		[]byte(base64.StdEncoding.EncodeToString(secret)), []byte(base64.RawURLEncoding.EncodeToString(secret)),
		[]byte(base64.RawStdEncoding.EncodeToString(secret))}
}

// holdsKey reports whether data holds any form (hex in either case).
func holdsKey(data []byte, forms [][]byte) bool {
	lower := bytes.ToLower(data)
	for i, f := range forms {
		if bytes.Contains(data, f) || (i == 1 && bytes.Contains(lower, f)) {
			return true
		}
	}
	return false
}

func mustNotHold(t *testing.T, where string, data []byte, forms [][]byte) {
	t.Helper()
	if holdsKey(data, forms) {
		t.Fatalf("key material in %s", where)
	}
}

// TestNoKeyMaterialOutsideTheVault runs a home through neuron init,
// grants, a placement, prog install, invocations driven through emit and
// host, a panicking act, a manual take and a reconciliation, and a job
// with its signed claim — with every log at debug level — and then looks
// for the neuron's secret, in every encoding, in the store file, the
// effect log, every other file of the home but the vault, the logs, the
// descriptors, the records and views as JSON, and tokens' metadata.
func TestNoKeyMaterialOutsideTheVault(t *testing.T) {
	home := t.TempDir()
	initNeuron(t, home)
	logs := &testenv.Buffer{}
	acts := hostact.NewRegistry()
	em, err := hostact.OpenEmitter(hostact.EffectsDir(home))
	if err != nil {
		t.Fatal(err)
	}
	defer em.Close()
	if err := hostact.Builtins(acts, em); err != nil {
		t.Fatal(err)
	}
	if err := acts.Register("boom", 0xB00, func(context.Context, hostact.Call) hostact.Result { panic("act panics") }); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	s := open(t, home, launch.IsolationOff, func(c *Config) { c.Logger, c.Acts = log, acts })
	ctx := context.Background()
	e := s.Fencing()
	var answers bytes.Buffer
	dump := func(v any) {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		answers.Write(b)
	}
	g, _ := e.Grant(ctx)
	g, err = e.SetGrant(ctx, g.Revision, fencing.GrantSpec{Acts: []uint64{hostact.TagEmit, hostact.TagHost, 0xB00}})
	if err != nil {
		t.Fatal(err)
	}
	dump(g)
	dump(e.Descriptor("testnet"))
	for _, src := range []string{"[3 [[16 [[1 12426838746798751745] [1 0]]] [16 [[1 12426838746798751750] [1 0]]]]]", "[16 [[1 2816] [1 0]]]"} {
		p, _, err := e.InstallProg(ctx, fencing.ProgSpec{Program: parseNoun(t, src), Acts: []uint64{hostact.TagEmit, hostact.TagHost, 0xB00}})
		if err != nil {
			t.Fatal(err)
		}
		dump(p)
		for i := range 3 {
			inv, err := e.Invoke(ctx, p.ID, []uint64{uint64(i)})
			if err != nil {
				t.Fatal(err)
			}
			s.RunInvocation(inv.ID)
			waitDriven(t, e, inv.ID)
		}
	}
	// A token's metadata, and a manual take.
	p, _, err := e.InstallProg(ctx, fencing.ProgSpec{Program: parseNoun(t, "[16 [[1 12426838746798751750] [1 0]]]"), Acts: []uint64{hostact.TagHost}})
	if err != nil {
		t.Fatal(err)
	}
	for _, take := range []bool{false, true} {
		inv, err := e.Invoke(ctx, p.ID, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Advance(ctx, inv.ID); err != nil {
			t.Fatal(err)
		}
		if take {
			a, err := e.Take(ctx, inv.ID)
			if err != nil {
				t.Fatal(err)
			}
			dump(a)
			if _, _, err := e.Reconcile(ctx, a.Operation, a.N, fencing.OutcomeSpec{Value: parseNoun(t, "5")}); err != nil {
				t.Fatal(err)
			}
			continue
		}
		tok, err := e.Prepare(ctx, inv.ID)
		if err != nil {
			t.Fatal(err)
		}
		dump(tok.Metadata())
		res, err := e.Dispatch(ctx, tok)
		if err != nil {
			t.Fatal(err)
		}
		dump(res)
	}
	id := s.submit(t, spec(t, "nokey", protocol.OpExecute, add2, []uint64{1, 2}, protocol.Limits{}, nil))
	dump(s.wait(t, id))
	r, _ := e.Root(ctx)
	dump(r)
	invs, _ := e.Invocations(ctx)
	for _, inv := range invs {
		v, _ := e.Invocation(ctx, inv.ID)
		dump(v)
	}
	ops, _ := e.Operations(ctx, "")
	dump(ops)
	progs, _ := e.Progs(ctx)
	dump(progs)
	s.close(t)

	forms := secretForms(t, home)
	if !holdsKey([]byte("x"+strings.ToUpper(string(forms[1]))+"x"), forms) || !holdsKey(forms[3], forms) {
		t.Fatal("the search does not find the key where it is")
	}
	mustNotHold(t, "the logs", logs.Bytes(), forms)
	mustNotHold(t, "records, descriptors, views and token metadata", answers.Bytes(), forms)
	if !bytes.Contains(logs.Bytes(), []byte(`"level":"DEBUG"`)) || !bytes.Contains(logs.Bytes(), []byte("act panicked")) {
		t.Fatal("the logs are missing what the test made happen: the test would prove nothing")
	}
	files := 0
	err = filepath.WalkDir(home, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p == neuron.VaultDir(home) {
			return filepath.SkipDir
		}
		if d.Type().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			files++
			mustNotHold(t, p, b, forms)
		}
		return nil
	})
	if err != nil || files < 2 {
		t.Fatalf("walked %d files of the home: %v", files, err)
	}
}

// waitDriven waits until an invocation has ended or waits on an unknown
// attempt.
func waitDriven(t *testing.T, e *fencing.Engine, id string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		v, err := e.Invocation(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if v.Status.Terminal() {
			return
		}
		for _, op := range v.Operations {
			for _, a := range op.Attempts {
				if a.Unknown && a.Claim != nil {
					return
				}
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("invocation %s was not driven", id)
}
