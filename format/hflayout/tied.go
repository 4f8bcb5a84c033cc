package hflayout

import "fmt"

// StoredEmbedding is the tensor that holds the token embedding. With tied
// set, a checkpoint saved through safetensors' shared-tensor dedup may
// keep the shared matrix only under the head's name; that name stands in.
func (l Layout) StoredEmbedding(tied bool) (string, error) {
	emb := l.Name(Embedding)
	switch {
	case l.hasEmbed:
		return emb, nil
	case tied && l.hasHead:
		return l.Head, nil
	case tied:
		return "", fmt.Errorf("tensor %s is missing (prefix %s), and so is the tied head %s: the checkpoint has no token embedding", quote(emb), quote(l.Prefix), quote(l.Head))
	}
	return "", fmt.Errorf("tensor %s is missing (prefix %s) and tie_word_embeddings is false, so %s cannot stand in: the checkpoint has no token embedding", quote(emb), quote(l.Prefix), quote(l.Head))
}

// StoredHead is the tensor that holds the LM head: "" when tied (the head
// is the embedding), an error when the config says untied and the head is
// missing.
func (l Layout) StoredHead(tied bool) (string, error) {
	switch {
	case tied:
		return "", nil
	case l.hasHead:
		return l.Head, nil
	}
	return "", fmt.Errorf("tensor %s is missing (prefix %s) and tie_word_embeddings is false: restore the head, or set tie_word_embeddings to true if the model shares it with the embedding", quote(l.Head), quote(l.Prefix))
}

// quote is %q of at most maxQuoted bytes of a name, so hostile names do not
// flood an error.
func quote(s string) string {
	if len(s) > maxQuoted {
		return fmt.Sprintf("%q… (%d bytes)", s[:maxQuoted], len(s))
	}
	return fmt.Sprintf("%q", s)
}
