package lifecycle

import "testing"

func TestTerminalStatesHaveNoExits(t *testing.T) {
	for _, s := range States {
		for _, to := range States {
			if s.Terminal() && CanMove(s, to) {
				t.Errorf("terminal %s can move to %s", s, to)
			}
		}
		if !s.Terminal() && len(next[s]) == 0 {
			t.Errorf("non-terminal %s has no exit", s)
		}
	}
}

func TestAcceptanceOnlyAfterVerification(t *testing.T) {
	for _, s := range States {
		if CanMove(s, Accepted) && s != Verified {
			t.Errorf("%s → accepted skips verification", s)
		}
		if CanMove(s, Verified) && s != Produced {
			t.Errorf("%s → verified without a produced result", s)
		}
	}
	if err := Move(Queued, Accepted); err == nil {
		t.Fatal("queued → accepted allowed")
	}
}
