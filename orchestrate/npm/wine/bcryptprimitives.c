/*
 * A stand-in for bcryptprimitives.dll under Debian's Wine 8, which lacks it: Rust's std (1.78 and later) imports
 * ProcessPrng from it on Windows, so every Rust program exits at load with "bcryptprimitives.dll not found". Only
 * for orchestrate/npm/test.sh, which puts it beside the exe in a scratch folder; never shipped (Windows 10 and later
 * have the real one). It fills the buffer from advapi32's RtlGenRandom (exported as SystemFunction036).
 *
 *   x86_64-w64-mingw32-gcc -shared -O2 -o bcryptprimitives.dll bcryptprimitives.c -ladvapi32
 */
#include <windows.h>

__declspec(dllimport) BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length)
{
    while (length > 0) {
        ULONG chunk = length > 0x40000000 ? 0x40000000 : (ULONG)length;
        if (!SystemFunction036(data, chunk))
            return FALSE;
        data += chunk;
        length -= chunk;
    }
    return TRUE;
}
