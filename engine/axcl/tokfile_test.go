package axcl

import (
	"encoding/base64"
	"fmt"
	"strings"
)

// ByteTokenizerTxt is an axllm tokenizer file of type 1 (byte-level) whose
// 256 tokens are the single bytes: the smallest file the runtime loads.
func ByteTokenizerTxt() string {
	var b strings.Builder
	b.WriteString("430 1\n0 0 0\n\n256\n")
	for i := range 256 {
		fmt.Fprintln(&b, base64.StdEncoding.EncodeToString([]byte{byte(i)}))
	}
	return b.String()
}
