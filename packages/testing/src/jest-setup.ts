// Tests get a quiet log unless someone asks for it.
process.env.LOG_LEVEL ??= "silent";
