package document

import (
	"time"

	"github.com/google/uuid"

	"github.com/graphmill/graphmill/internal/errs"
)

// Queue names of the pipeline (extraction, the next step, owns its
// queue).
const (
	QueueParsing        = "document_parsing"
	QueueChunkEmbedding = "chunk_embedding"
)

// Document statuses: where the document is in its pipeline.
const (
	StatusParsing = "parsing"
	StatusParsed  = "parsed"
	StatusFailed  = "failed"
)

// Document is an uploaded file and where it is in the pipeline.
type Document struct {
	ID         uuid.UUID `json:"id"`
	ProjectID  uuid.UUID `json:"projectId"`
	Filename   string    `json:"filename"`
	MimeType   string    `json:"mimeType"`
	SizeBytes  int64     `json:"sizeBytes"`
	SHA256     string    `json:"sha256"`
	Status     string    `json:"status" enum:"parsing,parsed,failed"`
	Error      string    `json:"error,omitempty" doc:"Why parsing failed."`
	Format     string    `json:"format,omitempty"`
	ChunkCount int       `json:"chunkCount"`
	Embedded   int       `json:"embeddedChunks" doc:"Chunks with an embedding."`
	CreatedAt  time.Time `json:"createdAt"`
	UpdatedAt  time.Time `json:"updatedAt"`
	// DatasourceID is the integration the document was synced from, with
	// the item's source metadata; unset for uploads.
	DatasourceID  *uuid.UUID `json:"datasourceId,omitempty" db:"datasource_id"`
	ExternalID    string     `json:"externalId,omitempty" db:"external_id" doc:"The item's id at its source."`
	SourceURL     string     `json:"sourceUrl,omitempty" db:"source_url"`
	SourceVersion string     `json:"sourceVersion,omitempty" db:"source_version" doc:"The item's version or ETag at its source."`
	SourceTitle   string     `json:"sourceTitle,omitempty" db:"source_title"`
	// Duplicate is set on upload when the same bytes were already in the
	// project: the existing document is returned and nothing is queued.
	Duplicate bool `json:"duplicate,omitempty" db:"-"`
}

// StoredChunk is a chunk as stored and served.
type StoredChunk struct {
	ID             uuid.UUID  `json:"id"`
	DocumentID     uuid.UUID  `json:"documentId"`
	Index          int        `json:"index"`
	Text           string     `json:"text"`
	StartOffset    int        `json:"startOffset"`
	EndOffset      int        `json:"endOffset"`
	HeadingPath    []string   `json:"headingPath"`
	TokenCount     int        `json:"tokenCount"`
	EmbeddingModel string     `json:"embeddingModel,omitempty"`
	EmbeddingDim   int        `json:"embeddingDim,omitempty"`
	EmbeddedAt     *time.Time `json:"embeddedAt,omitempty"`
}

// ChunkText is a chunk's text and place in its document, as extraction
// reads it.
type ChunkText struct {
	ID     uuid.UUID
	Index  int
	Text   string
	Tokens int
}

// Upload is a new document: its bytes in Data, or in Content when set (an
// upload spooled to a file, or decoded from JSON), which is streamed to
// storage rather than copied.
type Upload struct {
	ProjectID uuid.UUID
	UserID    uuid.UUID
	Filename  string
	MimeType  string
	Data      []byte
	Content   Content
}

// Errors of this domain.
var (
	ErrNotFound = errs.New(errs.NotFound, "document not found")
	// ErrChunkNotFound: no such chunk in the document.
	ErrChunkNotFound = errs.New(errs.NotFound, "chunk not found")
	ErrEmpty         = errs.New(errs.Invalid, "the document is empty")
)

// IsParsingQueue reports whether queue, as an event names it, is the
// parsing queue (readers such as the console match events without naming
// it).
func IsParsingQueue(queue string) bool { return queue == QueueParsing }
