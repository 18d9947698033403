package provider

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"

	"github.com/graphmill/graphmill/internal/llm"
	"github.com/graphmill/graphmill/internal/postgres"
)

// Call statuses.
const (
	CallSuccess = "success"
	CallError   = "error"
)

// Limits of a Call's record.
const (
	// ResponsePayloadMax bounds the response a call log keeps.
	ResponsePayloadMax = 256 << 10
	// callErrorMax bounds a call's error message.
	callErrorMax = 2000
)

// Generator is a resolved generative model (a Handle): every call goes
// through the rate governor and the usage ledger.
type Generator interface {
	Generate(ctx context.Context, req llm.GenerateRequest) (*llm.GenerateResult, error)
	Cost(u llm.Usage) float64
	Model() string
	Provider() string
}

// Call is one structured-output call as the call log of a job (an
// extraction's, a discovery's) keeps it, beside the usage ledger's row.
type Call struct {
	ID              uuid.UUID
	Provider        string
	ModelName       string
	Status          string // CallSuccess or CallError
	InputTokens     int
	OutputTokens    int
	TotalTokens     int
	CostUSD         float64
	DurationMs      int
	StartedAt       time.Time
	CompletedAt     *time.Time
	ResponsePayload json.RawMessage
	ErrorMessage    string
}

// GenerateCall makes one call through gen and returns its result with
// the call's record (timing, tokens, cost, the answer bounded to
// ResponsePayloadMax, the error); startedAt is the caller's clock
// reading. The error is gen's.
func GenerateCall(ctx context.Context, gen Generator, req llm.GenerateRequest, startedAt time.Time) (*llm.GenerateResult, Call, error) {
	t0 := time.Now()
	out, err := gen.Generate(ctx, req)
	dur := time.Since(t0)
	c := Call{
		ID: uuid.Must(uuid.NewV7()), Provider: gen.Provider(), ModelName: gen.Model(), Status: CallSuccess,
		DurationMs: int(dur.Milliseconds()), StartedAt: startedAt,
	}
	done := startedAt.Add(dur)
	c.CompletedAt = &done
	if err != nil {
		c.Status = CallError
		c.ErrorMessage = postgres.TextMax(err.Error(), callErrorMax)
		if ctx.Err() != nil {
			c.ErrorMessage = "cancelled: " + c.ErrorMessage
		}
		return nil, c, err
	}
	if out.Model != "" {
		c.ModelName = out.Model
	}
	c.InputTokens = int(out.Usage.InputText + out.Usage.InputImage + out.Usage.InputVideo + out.Usage.InputAudio)
	c.OutputTokens = int(out.Usage.Output)
	c.TotalTokens = c.InputTokens + c.OutputTokens
	c.CostUSD = gen.Cost(out.Usage)
	c.ResponsePayload = responsePayload(out.JSON)
	return out, c, nil
}

// responsePayload is raw for the call log: a marker in place of an
// answer too large or not JSON.
func responsePayload(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return nil
	}
	if len(raw) > ResponsePayloadMax || !json.Valid(raw) {
		out, _ := json.Marshal(map[string]any{"truncated": true, "bytes": len(raw)}) //nolint:errchkjson // a map of plain values
		return out
	}
	return raw
}
