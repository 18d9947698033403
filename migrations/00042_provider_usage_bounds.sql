-- +goose Up
-- Each token count of one provider call is within 0 and 10000000
-- (llm.MaxCallTokens, session 11). Before, the ledger took what an
-- endpoint reported: a tenant's OpenAI-compatible endpoint reporting
-- counts near the int64 limit made the usage sums overflow (every usage
-- summary of the project and organization failed), negative ones
-- lowered them. Such rows take the bounded counts; a negative estimated
-- cost becomes 0.
UPDATE provider_usage
SET text_tokens = LEAST(GREATEST(text_tokens, 0), 10000000),
    image_tokens = LEAST(GREATEST(image_tokens, 0), 10000000),
    video_tokens = LEAST(GREATEST(video_tokens, 0), 10000000),
    audio_tokens = LEAST(GREATEST(audio_tokens, 0), 10000000),
    output_tokens = LEAST(GREATEST(output_tokens, 0), 10000000),
    estimated_cost_usd = GREATEST(estimated_cost_usd, 0)
WHERE text_tokens NOT BETWEEN 0 AND 10000000
   OR image_tokens NOT BETWEEN 0 AND 10000000
   OR video_tokens NOT BETWEEN 0 AND 10000000
   OR audio_tokens NOT BETWEEN 0 AND 10000000
   OR output_tokens NOT BETWEEN 0 AND 10000000
   OR estimated_cost_usd < 0;

-- +goose Down
-- The reported counts are not kept: nothing to restore.
SELECT 1;
