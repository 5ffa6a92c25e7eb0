package protocol

import (
	"github.com/cyberia-to/cyber-supervisor/noxrunner/field"
)

// InputFileSchema is the only version of Joy's input file.
const InputFileSchema = 1

var (
	inputFileKeys = []string{"schema_version", "public", "secret"}
	// Twice the words, so that an overfull file is reported by its word
	// count; the slack covers the object itself.
	inputFileTree = treeLimits{maxDepth: 4, maxValues: 2*MaxInputWords + 16}
)

// ParseInputFile reads Joy's input file, schema v1:
// {"schema_version":1,"public":[...],"secret":[...]}. All three keys are
// required and no other is allowed; duplicates are refused; items are JSON
// unsigned integers or canonical decimal strings, each below p (never
// reduced); at most MaxInputWords words in total; at most MaxInputFileBytes.
// A non-empty secret list is refused with unsupported_secret. Messages
// name positions only: input files may hold secrets, so no value is ever
// echoed. It returns the public values.
func ParseInputFile(b []byte) ([]uint64, error) {
	if len(b) > MaxInputFileBytes {
		return nil, Errorf(CodeInvalidJob, "input file: %d bytes, at most %d", len(b), MaxInputFileBytes)
	}
	root, err := decodeTree(b, inputFileTree, CodeInvalidJob)
	if err != nil {
		return nil, prefixed("input file", err)
	}
	public, err := decodeInputFile(reader{code: CodeInvalidJob}, root)
	if err != nil {
		return nil, prefixed("input file", err)
	}
	return public, nil
}

func decodeInputFile(r reader, root *jvalue) ([]uint64, error) {
	o, err := r.object(root, "$")
	if err != nil {
		return nil, err
	}
	if err := o.only(inputFileKeys); err != nil {
		return nil, err
	}
	sv, err := o.need("schema_version")
	if err != nil {
		return nil, err
	}
	if v, err := r.u64Number(sv, o.at("schema_version")); err != nil || v != InputFileSchema {
		return nil, r.fail(o.at("schema_version"), "must be the JSON number %d", InputFileSchema)
	}
	pv, err := o.need("public")
	if err != nil {
		return nil, err
	}
	pub, err := r.array(pv, o.at("public"), MaxInputWords)
	if err != nil {
		return nil, err
	}
	secv, err := o.need("secret")
	if err != nil {
		return nil, err
	}
	sec, err := r.array(secv, o.at("secret"), MaxInputWords)
	if err != nil {
		return nil, err
	}
	if len(pub)+len(sec) > MaxInputWords {
		return nil, r.fail("$", "%d words, at most %d", len(pub)+len(sec), MaxInputWords)
	}
	if len(sec) > 0 {
		return nil, Errorf(CodeUnsupportedSecret, "$.secret: the public profile takes no secret inputs")
	}
	out := make([]uint64, len(pub))
	for i, it := range pub {
		if out[i], err = inputWord(r, it, index(o.at("public"), i)); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// inputWord reads one word: a JSON unsigned integer or a canonical decimal
// string, below p either way.
func inputWord(r reader, v *jvalue, path string) (uint64, error) {
	var (
		n   uint64
		err error
	)
	if v.kind == jNumber {
		n, err = r.u64Number(v, path)
	} else {
		n, err = r.u64(v, path)
	}
	if err != nil {
		return 0, err
	}
	if n >= field.P {
		return 0, r.fail(path, "not a canonical field element (must be below p)")
	}
	return n, nil
}

// ReadInputFile reads and parses an input file from a path by the rule
// of ReadLocalFile: a regular file, not a symlink, at most
// MaxInputFileBytes. Messages never include contents.
func ReadInputFile(path string) ([]uint64, error) {
	b, err := ReadLocalFile("input file", path, MaxInputFileBytes, CodeInvalidJob)
	if err != nil {
		return nil, err
	}
	return ParseInputFile(b)
}
