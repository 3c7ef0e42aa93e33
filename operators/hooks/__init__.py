from operators.hooks.timing import TimingStoreHook, resolve_db_url

__all__ = ["TimingStoreHook", "resolve_db_url"]
