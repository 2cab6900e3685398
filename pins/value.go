package pins

// ValidValue checks v against a kind, as a pin of that kind is checked: for
// values from elsewhere that must meet the same rules (what a step says it
// resolved, a locked pin).
func ValidValue(k Kind, v string) error {
	_, err := Floats(k, v)
	return err
}

// Floats says whether a valid value of kind k moves by itself (a branch, a
// :latest or nightly tag), as pins check reports it; the error is
// ValidValue's.
func Floats(k Kind, v string) (bool, error) {
	return validate(Spec{Name: string(k), Kind: k}, v)
}
