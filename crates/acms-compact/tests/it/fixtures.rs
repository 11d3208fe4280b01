//! Real-shaped transcripts (fixtures under test_data/).
