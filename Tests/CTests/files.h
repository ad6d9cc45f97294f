/*
 * files.h — folder helpers for the C tests that save and open files. Include after <dirent.h>
 * and <string.h> (with _POSIX_C_SOURCE defined).
 */
#ifndef REDUXSTORE_CTESTS_FILES_H
#define REDUXSTORE_CTESTS_FILES_H

/* The number of entries in `path` (a folder), "." and ".." aside; -1 when it cannot be read. */
static inline int entries_in(const char *path)
{
    DIR *dir = opendir(path);
    struct dirent *entry;
    int count = 0;
    if (dir == NULL) return -1;
    while ((entry = readdir(dir)) != NULL)
        if (strcmp(entry->d_name, ".") != 0 && strcmp(entry->d_name, "..") != 0) count++;
    closedir(dir);
    return count;
}

#endif /* REDUXSTORE_CTESTS_FILES_H */
