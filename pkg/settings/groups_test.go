package settings

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTargetGroupsBecomeTargetsWithDefaults(t *testing.T) {
	s, err := LoadWithURL("http://prometheus:9090", false, []byte(`{"mode": "remote",
		"targets": [{"name": "vllm-a", "selector": "{job=\"a\"}"}],
		"targetGroups": [{"name": "chat", "selector": "{namespace=\"llm\", job=\"vllm\"}", "groupLabels": ["deployment"]},
		                 {"name": "batch", "selector": "{job=\"batch\"}", "targetLabels": ["instance"], "maxTargets": 500, "engine": "sglang"}]}`), nil)
	require.NoError(t, err)
	require.Len(t, s.Targets, 3)
	chat := s.Targets[1]
	assert.Equal(t, "chat", chat.Name)
	assert.Equal(t, `{namespace="llm", job="vllm"}`, chat.SelectorOrDefault())
	require.NotNil(t, chat.Group)
	assert.Equal(t, []string{"namespace", "pod"}, chat.Group.TargetLabels, "the default names a Kubernetes pod")
	assert.Equal(t, DefaultGroupMaxTargets, chat.Group.MaxTargets)
	assert.Equal(t, "sglang", s.Targets[2].Engine)
	assert.Equal(t, 500, s.Targets[2].Group.MaxTargets)
	assert.Nil(t, s.Targets[0].Group)
	assert.Equal(t, []string{"namespace", "pod", "deployment", "instance"}, s.GroupLabelsInScope(nil))
	assert.Equal(t, []string{"instance"}, s.GroupLabelsInScope([]string{"batch", "vllm-a"}))
	assert.Empty(t, s.GroupLabelsInScope([]string{"vllm-a"}))
}

func TestTargetGroupsRejectedWithTheField(t *testing.T) {
	cases := map[string]string{
		`{"targetGroups": [{"name": "g", "selector": "{job=\"v\"}"}]}`: `targetGroups[0].selector: a selector picks series on a remote server; in embedded mode the group's targets come from its discovery`,
		`{"targetGroups": [{"name": "g"}]}`:                            `targetGroups[0].discovery: an embedded-mode target group finds its targets by file, http, dns or kubernetes discovery`,
		`{"mode": "remote", "targetGroups": [{"name": "g", "selector": "{job=\"v\"}", "discovery": {"dns": {"names": ["x"]}}}]}`: `targetGroups[0].discovery: in remote mode the server discovers`,
		`{"targetGroups": [{"name": "g", "discovery": {"file": {"files": ["targets.json"]}}}]}`:                                  `targetGroups[0].discovery.file.files[0]: "targets.json" is not an absolute path`,
		`{"targetGroups": [{"name": "g", "discovery": {"http": {"url": "ftp://sd"}}}]}`:                                          `targetGroups[0].discovery.http.url`,
		`{"targetGroups": [{"name": "g", "discovery": {"dns": {"names": ["v.llm"], "type": "A"}}}]}`:                             `targetGroups[0].discovery.dns.port: an A look-up needs the port`,
		`{"targetGroups": [{"name": "g", "discovery": {"dns": {"names": ["v"], "refreshInterval": "soon"}}}]}`:                   `targetGroups[0].discovery.dns.refreshInterval: "soon" is not a positive duration`,
		`{"targetGroups": [{"name": "g", "discovery": {"kubernetes": {"role": "node"}}}]}`:                                       `targetGroups[0].discovery.kubernetes.role: "node" is not one of pod, endpoints, endpointslice`,
		`{"targetGroups": [{"name": "g", "discovery": {"kubernetes": {}, "scheme": "ftp"}}]}`:                                    `targetGroups[0].discovery.scheme: "ftp" is neither http nor https`,
		`{"mode": "remote", "targetGroups": [{"name": "", "selector": "{job=\"v\"}"}]}`:                                          `targetGroups[0].name: "" must be`,
		`{"mode": "remote", "targets": [{"name": "g"}], "targetGroups": [{"name": "g", "selector": "{a=\"b\"}"}]}`:               `targetGroups[0].name: "g" is already used by targets[0]`,
		`{"mode": "remote", "targetGroups": [{"name": "g"}]}`:                                                                    `targetGroups[0].selector: a target group needs the label selector`,
		`{"mode": "remote", "targetGroups": [{"name": "g", "selector": "{x=~\".*\"}"}]}`:                                         `targetGroups[0].selector: "{x=~\".*\"}" would match every series`,
		`{"mode": "remote", "targetGroups": [{"name": "g", "selector": "{job=\"v\"}", "targetLabels": ["job"]}]}`:                `targetGroups[0].targetLabels[0]: "job" cannot name or group targets`,
		`{"mode": "remote", "targetGroups": [{"name": "g", "selector": "{job=\"v\"}", "groupLabels": ["pod"]}]}`:                 `targetGroups[0].groupLabels[0]: "pod" is named twice`,
		`{"mode": "remote", "targetGroups": [{"name": "g", "selector": "{job=\"v\"}", "groupLabels": ["a-b"]}]}`:                 `targetGroups[0].groupLabels[0]: "a-b" is not a label name`,
		`{"mode": "remote", "targetGroups": [{"name": "g", "selector": "{job=\"v\"}", "maxTargets": 1001}]}`:                     `targetGroups[0].maxTargets: 1001 is not between 1 and 1000`,
		`{"mode": "remote", "targetGroups": [{"name": "g", "selector": "{job=\"v\"}", "engine": "x"}]}`:                          `targetGroups[0].engine: "x" is not one of`,
	}
	for js, want := range cases {
		_, err := LoadWithURL("http://prometheus:9090", false, []byte(js), nil)
		require.Error(t, err, js)
		assert.Contains(t, err.Error(), want, js)
	}
}

// TestTargetGroupsRoundTrip: settings encoded after a load (each group's own
// target included) load again to the same settings, as FuzzLoad requires.
func TestTargetGroupsRoundTrip(t *testing.T) {
	js := []byte(`{"mode": "remote", "targetGroups": [{"name": "chat", "selector": "{job=\"vllm\"}", "groupLabels": ["deployment"]}]}`)
	s, err := LoadWithURL("http://prometheus:9090", false, js, nil)
	require.NoError(t, err)
	b, err := json.Marshal(s)
	require.NoError(t, err)
	s2, err := LoadWithURL("http://prometheus:9090", false, b, nil)
	require.NoError(t, err)
	b2, _ := json.Marshal(s2)
	assert.JSONEq(t, string(b), string(b2))
	require.Len(t, s2.Targets, 1)
	require.NotNil(t, s2.Targets[0].Group)
	assert.Equal(t, "chat", s2.Targets[0].Group.Name)

	// A target of the group's name that is not the group's own is refused.
	_, err = LoadWithURL("http://prometheus:9090", false, []byte(`{"mode": "remote", "targets": [{"name": "chat", "selector": "{job=\"other\"}"}],
		"targetGroups": [{"name": "chat", "selector": "{job=\"vllm\"}"}]}`), nil)
	require.ErrorContains(t, err, `targetGroups[0].name: "chat" is already used by targets[0]`)
}

func TestEmbeddedTargetGroupsDiscover(t *testing.T) {
	s, err := Load([]byte(`{"targets": [{"name": "vllm-a", "url": "http://10.0.0.5:8000/metrics"}],
		"targetGroups": [{"name": "fleet", "discovery": {"file": {"files": ["/etc/inferscope/targets/*.json"]}, "dns": {"names": ["_metrics._tcp.vllm"]}}},
		                 {"name": "kube", "discovery": {"kubernetes": {"apiServer": "https://10.0.0.1:6443", "namespaces": ["llm"], "labelSelector": "app=vllm", "port": 8000}, "scheme": "https"}}]}`),
		map[string]string{"kube.kubeBearerToken": "kube-token", "kube.kubeCACert": "-----BEGIN CERTIFICATE-----", "fleet.bearerToken": "scrape-token"})
	require.NoError(t, err)
	require.Len(t, s.Targets, 3)
	fleet, kube := s.Targets[1].Group, s.Targets[2].Group
	require.NotNil(t, fleet)
	assert.Equal(t, []string{"instance"}, fleet.TargetLabels)
	assert.Equal(t, "SRV", fleet.Discovery.DNS.Type)
	assert.Equal(t, "/metrics", fleet.Discovery.MetricsPath)
	assert.Equal(t, "scrape-token", fleet.BearerToken)
	assert.Equal(t, []string{"namespace", "pod"}, kube.TargetLabels)
	assert.Equal(t, "pod", kube.Discovery.Kubernetes.Role)
	assert.Equal(t, "kube-token", kube.Discovery.Kubernetes.BearerToken)
	b, err := json.Marshal(s)
	require.NoError(t, err)
	assert.NotContains(t, string(b), "kube-token")
	assert.NotContains(t, string(b), "scrape-token")
	assert.NotContains(t, string(b), "BEGIN CERTIFICATE")
	s2, err := Load(b, map[string]string{"kube.kubeBearerToken": "kube-token", "fleet.bearerToken": "scrape-token"})
	require.NoError(t, err, "the round trip")
	assert.Len(t, s2.Targets, 3)
}
