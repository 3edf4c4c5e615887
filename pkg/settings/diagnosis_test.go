package settings

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDiagnosisDefaultsAndOverrides(t *testing.T) {
	s, err := Load([]byte(`{"targets":[{"name":"a","url":"http://a:8000/metrics"}]}`), nil)
	require.NoError(t, err)
	assert.Equal(t, DefaultDiagnosis(), s.Diagnosis)
	assert.Equal(t, 2, s.Diagnosis.StallScrapes)
	assert.Equal(t, 0.9, s.Diagnosis.KVUsageHigh)

	s, err = Load([]byte(`{"diagnosis":{"stallScrapes":4,"kvUsageHigh":0.95,"itlHigh":0.05}}`), nil)
	require.NoError(t, err)
	assert.Equal(t, 4, s.Diagnosis.StallScrapes)
	assert.Equal(t, 0.95, s.Diagnosis.KVUsageHigh)
	assert.Equal(t, 0.05, s.Diagnosis.ITLHigh)
	assert.Equal(t, 0.3, s.Diagnosis.QueueTimeShare, "unset fields keep their default")
	assert.Zero(t, s.Diagnosis.MaxNumSeqs, "default: the observed plateau")

	s, err = Load([]byte(`{"diagnosis":{"maxNumSeqs":256}}`), nil)
	require.NoError(t, err)
	assert.Equal(t, 256.0, s.Diagnosis.MaxNumSeqs)
}

func TestDiagnosisValidation(t *testing.T) {
	for js, want := range map[string]string{
		`{"diagnosis":{"stallScrapes":-1}}`:  "diagnosis.stallScrapes: -1 must be between 1 and 100",
		`{"diagnosis":{"kvUsageHigh":1.5}}`:  "diagnosis.kvUsageHigh: 1.5 must be a ratio in (0, 1]",
		`{"diagnosis":{"hysteresis":-0.1}}`:  "diagnosis.hysteresis: -0.1 must be a ratio in (0, 1]",
		`{"diagnosis":{"itlHigh":-2}}`:       "diagnosis.itlHigh: -2 must be a positive number",
		`{"diagnosis":{"stallScrapes":"x"}}`: "jsonData is not valid JSON",
		`{"diagnosis":{"maxNumSeqs":-4}}`:    "diagnosis.maxNumSeqs: -4 must be a whole number of requests",
		`{"diagnosis":{"maxNumSeqs":2.5}}`:   "diagnosis.maxNumSeqs: 2.5 must be a whole number of requests",
	} {
		_, err := Load([]byte(js), nil)
		require.Error(t, err, js)
		assert.Contains(t, err.Error(), want, js)
	}
}
