//go:build !(linux && cgo)

package gpu

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestOpenNVMLStub(t *testing.T) {
	src, err := OpenNVML()
	assert.Nil(t, src)
	assert.True(t, errors.Is(err, ErrNVMLUnavailable))
	assert.Contains(t, err.Error(), "NVML needs linux and cgo")
}
