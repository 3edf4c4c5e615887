package ollamatest

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"strings"
)

// GGUF value types (the GGUF specification, version 3).
const (
	ggufUint32  uint32 = 4
	ggufInt32   uint32 = 5
	ggufFloat32 uint32 = 6
	ggufBool    uint32 = 7
	ggufString  uint32 = 8
	ggufArray   uint32 = 9
)

// ggufAlignment is the default alignment of tensor data (general.alignment unset).
const ggufAlignment = 32

// ggmlTypeF32 is ggml's tensor type id of 32-bit floats.
const ggmlTypeF32 uint32 = 0

// Token types of tokenizer.ggml.token_type (llama.cpp's llama_token_type).
const (
	tokenNormal  int32 = 1
	tokenUnknown int32 = 2
	tokenControl int32 = 3
	tokenByte    int32 = 6
)

// ModelSpec is the shape of a tiny llama-architecture model with random weights. The zero
// value of a field takes the default noted beside it.
type ModelSpec struct {
	Seed          uint64 // weights' random seed
	Embedding     int    // llama.embedding_length; default 64
	Layers        int    // llama.block_count; default 2
	Heads         int    // llama.attention.head_count (= head_count_kv); default 4
	FeedForward   int    // llama.feed_forward_length; default 128
	ContextLength int    // llama.context_length; default 4096
}

func (s ModelSpec) withDefaults() ModelSpec {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&s.Embedding, 64)
	def(&s.Layers, 2)
	def(&s.Heads, 4)
	def(&s.FeedForward, 128)
	def(&s.ContextLength, 4096)
	return s
}

// Words are the vocabulary's whole-word pieces (SentencePiece style, "▁" for the leading
// space). Generation only ever picks one of them: the output rows of the control and byte
// tokens are zero, so their logit is 0 while the largest of the words' random logits is
// positive (all of them negative has probability 2^-len(Words)). The model therefore never
// emits end-of-sequence and every request generates exactly max_tokens tokens, each one a
// whole word that decodes on its own (no partial UTF-8 held back by the server).
var Words = strings.Fields("the of and to in a is that for it as was with be by on not he this are or his from at which " +
	"but have an they you were her she there been one all we their has would when if so no will more can what up out into " +
	"time only about other")

// vocabulary returns the tokens, their types and scores: <unk>, <s>, </s>, the 256 byte
// tokens <0x00>…<0xFF> (the SentencePiece byte fallback that tokenizes any prompt), then
// Words. The BOS id is 1 and the EOS id 2.
func vocabulary() (tokens []string, types []int32, scores []float32) {
	add := func(tok string, typ int32, score float32) {
		tokens, types, scores = append(tokens, tok), append(types, typ), append(scores, score)
	}
	add("<unk>", tokenUnknown, 0)
	add("<s>", tokenControl, 0)
	add("</s>", tokenControl, 0)
	for b := range 256 {
		add(fmt.Sprintf("<0x%02X>", b), tokenByte, 0)
	}
	for i, w := range Words {
		add("\u2581"+w, tokenNormal, -float32(i+1))
	}
	return tokens, types, scores
}

// firstWord is the id of Words[0].
const firstWord = 3 + 256

type ggufKV struct {
	key string
	typ uint32
	val any // uint32, int32, float32, bool, string, []string, []int32, []float32
}

type ggufTensor struct {
	name string
	dims []uint64 // ggml order: dims[0] is the contiguous one
	data []float32
}

// WriteModel writes a GGUF (version 3) file of a llama-architecture model with random F32
// weights and a SentencePiece ("llama") tokenizer over vocabulary() to path. The file is
// small (about 0.4 MB with the defaults) and is what Ollama's /api/create imports as a model.
func WriteModel(path string, spec ModelSpec) error {
	s := spec.withDefaults()
	if s.Embedding%s.Heads != 0 {
		return fmt.Errorf("embedding length %d is not a multiple of the head count %d", s.Embedding, s.Heads)
	}
	tokens, types, scores := vocabulary()
	nv := len(tokens)
	rng := rand.New(rand.NewPCG(s.Seed, 0x6767756620))
	random := func(n, fanIn int) []float32 {
		out := make([]float32, n)
		scale := 1 / math.Sqrt(float64(fanIn))
		for i := range out {
			out[i] = float32((rng.Float64()*2 - 1) * scale * math.Sqrt(3))
		}
		return out
	}
	ones := func(n int) []float32 {
		out := make([]float32, n)
		for i := range out {
			out[i] = 1
		}
		return out
	}
	e, ff := s.Embedding, s.FeedForward
	ts := []ggufTensor{{"token_embd.weight", []uint64{uint64(e), uint64(nv)}, random(e*nv, 1)}}
	for l := range s.Layers {
		p := fmt.Sprintf("blk.%d.", l)
		ts = append(ts,
			ggufTensor{p + "attn_norm.weight", []uint64{uint64(e)}, ones(e)},
			ggufTensor{p + "attn_q.weight", []uint64{uint64(e), uint64(e)}, random(e*e, e)},
			ggufTensor{p + "attn_k.weight", []uint64{uint64(e), uint64(e)}, random(e*e, e)},
			ggufTensor{p + "attn_v.weight", []uint64{uint64(e), uint64(e)}, random(e*e, e)},
			ggufTensor{p + "attn_output.weight", []uint64{uint64(e), uint64(e)}, random(e*e, e)},
			ggufTensor{p + "ffn_norm.weight", []uint64{uint64(e)}, ones(e)},
			ggufTensor{p + "ffn_gate.weight", []uint64{uint64(e), uint64(ff)}, random(e*ff, e)},
			ggufTensor{p + "ffn_up.weight", []uint64{uint64(e), uint64(ff)}, random(e*ff, e)},
			ggufTensor{p + "ffn_down.weight", []uint64{uint64(ff), uint64(e)}, random(ff*e, ff)},
		)
	}
	out := random(e*nv, e)
	for tok := range firstWord { // control and byte tokens: logit 0, never the argmax
		clear(out[tok*e : (tok+1)*e])
	}
	ts = append(ts,
		ggufTensor{"output_norm.weight", []uint64{uint64(e)}, ones(e)},
		ggufTensor{"output.weight", []uint64{uint64(e), uint64(nv)}, out},
	)
	kvs := []ggufKV{
		{"general.architecture", ggufString, "llama"},
		{"general.name", ggufString, "inferscope-tiny"},
		{"general.file_type", ggufUint32, uint32(0)}, // all F32
		{"llama.context_length", ggufUint32, uint32(s.ContextLength)},
		{"llama.embedding_length", ggufUint32, uint32(e)},
		{"llama.block_count", ggufUint32, uint32(s.Layers)},
		{"llama.feed_forward_length", ggufUint32, uint32(ff)},
		{"llama.rope.dimension_count", ggufUint32, uint32(e / s.Heads)},
		{"llama.attention.head_count", ggufUint32, uint32(s.Heads)},
		{"llama.attention.head_count_kv", ggufUint32, uint32(s.Heads)},
		{"llama.attention.layer_norm_rms_epsilon", ggufFloat32, float32(1e-5)},
		{"llama.rope.freq_base", ggufFloat32, float32(10000)},
		{"llama.vocab_size", ggufUint32, uint32(nv)},
		{"tokenizer.ggml.model", ggufString, "llama"},
		{"tokenizer.ggml.tokens", ggufArray, tokens},
		{"tokenizer.ggml.scores", ggufArray, scores},
		{"tokenizer.ggml.token_type", ggufArray, types},
		{"tokenizer.ggml.bos_token_id", ggufUint32, uint32(1)},
		{"tokenizer.ggml.eos_token_id", ggufUint32, uint32(2)},
		{"tokenizer.ggml.unknown_token_id", ggufUint32, uint32(0)},
		{"tokenizer.ggml.add_bos_token", ggufBool, true},
		{"tokenizer.ggml.add_eos_token", ggufBool, false},
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	if err := writeGGUF(w, kvs, ts); err != nil {
		f.Close()
		return err
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// writeGGUF writes the header, the metadata, the tensor infos and the aligned tensor data.
func writeGGUF(w io.Writer, kvs []ggufKV, ts []ggufTensor) error {
	cw := &countWriter{w: w}
	le := func(v any) {
		if cw.err == nil {
			cw.err = binary.Write(cw, binary.LittleEndian, v)
		}
	}
	str := func(s string) {
		le(uint64(len(s)))
		if cw.err == nil {
			_, cw.err = io.WriteString(cw, s)
		}
	}
	le([]byte("GGUF"))
	le(uint32(3))
	le(uint64(len(ts)))
	le(uint64(len(kvs)))
	for _, kv := range kvs {
		str(kv.key)
		le(kv.typ)
		switch v := kv.val.(type) {
		case string:
			str(v)
		case uint32, int32, float32, bool:
			le(v)
		case []string:
			le(ggufString)
			le(uint64(len(v)))
			for _, s := range v {
				str(s)
			}
		case []int32:
			le(ggufInt32)
			le(uint64(len(v)))
			le(v)
		case []float32:
			le(ggufFloat32)
			le(uint64(len(v)))
			le(v)
		default:
			return fmt.Errorf("gguf: key %s has an unsupported value type %T", kv.key, kv.val)
		}
	}
	var offset uint64
	for _, t := range ts {
		str(t.name)
		le(uint32(len(t.dims)))
		n := uint64(1)
		for _, d := range t.dims {
			le(d)
			n *= d
		}
		if n != uint64(len(t.data)) {
			return fmt.Errorf("gguf: tensor %s has %d values for dims %v", t.name, len(t.data), t.dims)
		}
		le(ggmlTypeF32)
		le(offset)
		offset += pad(n*4, ggufAlignment)
	}
	le(make([]byte, pad(cw.n, ggufAlignment)-cw.n))
	for _, t := range ts {
		le(t.data)
		size := uint64(len(t.data)) * 4
		le(make([]byte, pad(size, ggufAlignment)-size))
	}
	if cw.err != nil {
		return errors.Join(errors.New("gguf: writing"), cw.err)
	}
	return nil
}

func pad(n, align uint64) uint64 { return (n + align - 1) / align * align }

type countWriter struct {
	w   io.Writer
	n   uint64
	err error
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += uint64(n)
	return n, err
}
