"""The operator console (S36, S37): a Textual app over the engine's read models and
operator actions. Nothing here writes SQL; everything goes through `Client`."""
