package connector

import (
	"encoding/json"
	"fmt"
)

// SaveState encodes state as JSON and records it on w (Walker.SetState):
// the state to save when the sync succeeds, and its checkpoint until then.
func SaveState(w Walker, state any) error {
	raw, err := json.Marshal(state)
	if err != nil {
		return fmt.Errorf("encode connector state: %w", err)
	}
	w.SetState(raw)
	return nil
}
