"""mempipe's domain: settings, records, stores, embedding providers and the pipeline's plumbing."""
