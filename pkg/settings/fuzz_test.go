package settings

import (
	"bytes"
	"encoding/json"
	"regexp"
	"testing"
)

// fieldError is the shape of every rejection: it starts with the jsonData
// field at fault ("targets[1].url: …", "retention: …") or says the jsonData
// is not JSON.
var fieldError = regexp.MustCompile(`^(jsonData is not valid JSON|[a-zA-Z]+(\[\d+\])?(\.[a-zA-Z]+)?:)`)

// FuzzLoad: Load never panics; every rejection names its field; accepted
// settings encode to JSON that loads again to the same JSON; secrets never
// appear in that JSON.
func FuzzLoad(f *testing.F) {
	for _, s := range []string{
		`{}`,
		``,
		`{"targets":[{"name":"vllm-a","url":"http://10.0.0.5:8000/metrics","engine":"vllm","labels":{"dc":"eu"},"agent":"node-a","gpus":[0,1]}],
		  "gpuAgents":[{"name":"node-a","url":"http://10.0.0.5:9400/metrics","kind":"dcgm"}],
		  "scrapeInterval":"15s","scrapeTimeout":"10s","retention":"15d","retentionSize":"1GB","storagePath":"/var/lib/grafana/inferscope",
		  "bodySizeLimit":8388608,"sampleLimit":50000}`,
		`{"targets":[{"name":"a","url":"https://a:8443/m?x=1","basicAuthUser":"u","tlsSkipVerify":true}],"retention":"91d"}`,
		`{"scrapeInterval":"5s","scrapeTimeout":"10s"}`,
		`{"targets":[{"name":"a b","url":"ftp://x"}]}`,
		`{"retentionSize":"0","storagePath":"relative/dir"}`,
		`{"targets":null,"gpuAgents":[{}]}`,
	} {
		f.Add([]byte(s), "vllm-a.bearerToken", "S3CR3T-fuzz-value-000")
	}
	f.Fuzz(func(t *testing.T, js []byte, secretKey, secretVal string) {
		secure := map[string]string{secretKey: secretVal}
		s, err := Load(js, secure)
		if err != nil {
			if !fieldError.MatchString(err.Error()) {
				t.Fatalf("rejection does not name its field: %q", err)
			}
			return
		}
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatalf("accepted settings do not encode: %v", err)
		}
		if len(secretVal) >= 12 && !bytes.Contains(js, []byte(secretVal)) && bytes.Contains(b, []byte(secretVal)) {
			t.Fatalf("secret %q appears in the settings JSON %s", secretVal, b)
		}
		s2, err := Load(b, secure)
		if err != nil {
			t.Fatalf("settings encoded as %s do not load again: %v", b, err)
		}
		b2, _ := json.Marshal(s2)
		if !bytes.Equal(b, b2) {
			t.Fatalf("settings change on a round trip:\n%s\n%s", b, b2)
		}
	})
}
