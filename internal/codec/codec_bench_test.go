package codec

import (
	"bytes"
	"fmt"
	"testing"
)

// benchPayload is 64 KiB of batch-like text (repetitive field names,
// varying values).
func benchPayload() []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < 64<<10; i++ {
		fmt.Fprintf(&b, `{"id":%d,"user":"user-%d","event":"click","ts":%d}`, i, i%977, 1700000000000+i*37)
	}
	return b.Bytes()[:64<<10]
}

func BenchmarkCompress(b *testing.B) {
	in := benchPayload()
	for _, c := range every[1:] {
		b.Run(c.String(), func(b *testing.B) {
			b.SetBytes(int64(len(in)))
			var z []byte
			for b.Loop() {
				z, _ = Compress(c, in)
			}
			b.ReportMetric(float64(len(z))/float64(len(in)), "ratio")
		})
	}
}

func BenchmarkDecompress(b *testing.B) {
	in := benchPayload()
	for _, c := range every[1:] {
		z, err := Compress(c, in)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(c.String(), func(b *testing.B) {
			b.SetBytes(int64(len(in)))
			for b.Loop() {
				if _, err := Decompress(c, z, len(in)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
