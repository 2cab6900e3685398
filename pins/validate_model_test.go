package pins

import "testing"

func TestValidateModel(t *testing.T) {
	s := Spec{Name: "VERIFY_MODEL", Kind: KindModel, Optional: true}
	for v, ok := range map[string]bool{
		"Qwen/Qwen3-0.6B": true, "/srv/models/qwen3": true, "": true,
		"Qwen": false, "a/b/c": false, "../x": false, "/srv/../etc": false, "Qwen/Qwen3 0.6B": false, "org/$(id)": false,
	} {
		if _, err := validate(s, v); (err == nil) != ok {
			t.Errorf("validate(%q) error = %v, want ok=%v", v, err, ok)
		}
	}
}
