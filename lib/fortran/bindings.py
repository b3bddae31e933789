#!/usr/bin/env python3
"""bindings.py - the table of the functions of include/chorus.h that the
Fortran module `chorus` binds, and the generator of the two Fortran files
that the build makes from it (lib/fortran/meson.build runs it):

  chorus_c.f90            module chorus_c: one bind(C) interface per function,
                          named c_<name without chorus_>, handles and buffers
                          as type(c_ptr);
  chorus_collectives.f90  module chorus_collectives: the Fortran wrapper of
                          every collective and of its nonblocking twin.

The rest of the module is written by hand: chorus_core.F90 (constants,
handles, and the wrappers of the functions in OTHERS below) and chorus.F90
(which puts the modules together; its header says how C maps to Fortran).

To bind a new collective of chorus.h (and its nonblocking twin), add a row
to COLLECTIVES; an argument name that ARGUMENTS does not know yet gets an
entry there. Any other function: a row in OTHERS, and its wrapper in
chorus_core.F90.

Usage: bindings.py CHORUS_C_F90 CHORUS_COLLECTIVES_F90
"""
import re
import sys

# ----------------------------------------------------------------- the table

# Each collective: its name without chorus_, and its arguments in chorus.h's
# order (and names: a Fortran caller may pass them by keyword). Its
# nonblocking twin, chorus_i<name>, takes the same and then `request`.
COLLECTIVES = [
    ('allreduce', 'sendbuf recvbuf count datatype op comm stream'),
    ('broadcast', 'sendbuf recvbuf count datatype root comm stream'),
    ('reduce', 'sendbuf recvbuf count datatype op root comm stream'),
    ('reduce_scatter', 'sendbuf recvbuf recvcount datatype op comm stream'),
    ('reduce_scatterv', 'sendbuf recvbuf recvcounts datatype op comm stream'),
    ('allgather', 'sendbuf recvbuf sendcount datatype comm stream'),
    ('allgatherv', 'sendbuf sendcount recvbuf recvcounts displs datatype comm stream'),
    ('alltoall', 'sendbuf recvbuf count datatype comm stream'),
    ('alltoallv', 'sendbuf sendcounts sdispls recvbuf recvcounts rdispls datatype comm stream'),
    ('gather', 'sendbuf recvbuf count datatype root comm stream'),
    ('gatherv', 'sendbuf sendcount recvbuf recvcounts displs datatype root comm stream'),
    ('scatter', 'sendbuf recvbuf count datatype root comm stream'),
    ('scatterv', 'sendbuf sendcounts displs recvbuf recvcount datatype root comm stream'),
    ('barrier', 'comm stream'),
]

# How C passes each kind of value, as a declaration in a bind(C) interface.
C_KINDS = {
    'int': 'integer(c_int), value :: {}',
    'int*': 'integer(c_int) :: {}',                  # written by C
    'size_t': 'integer(c_size_t), value :: {}',
    'size_t[]': 'integer(c_size_t), intent(in) :: {}(*)',
    'ptr': 'type(c_ptr), value :: {}',               # a pointer or a handle
    'ptr*': 'type(c_ptr) :: {}',                     # a handle written by C
    'funptr': 'type(c_funptr), value :: {}',
}
# What a function returns, as the type of its result.
RESULTS = {'int': 'integer(c_int)', 'size_t': 'integer(c_size_t)', 'ptr': 'type(c_ptr)'}


class Arg:
    """An argument of a collective: its kind for C (C_KINDS), its
    declaration in the Fortran wrapper, and what the wrapper passes to C."""

    def __init__(self, c, fortran, passed='{}'):
        self.c, self.fortran, self.passed = c, fortran, passed


# Buffers: assumed-type and assumed-rank, so that any scalar or array goes.
# A blocking call declares them `contiguous` (the compiler copies a strided
# section in and out around the call); a nonblocking one `asynchronous`, and
# checks that they are contiguous (contiguous_buffers in chorus_core.F90),
# since a copy would not outlive the call.
SEND = Arg('ptr', 'type(*), dimension(..), intent(in), target, {buffer} :: {}', 'c_loc({})')
RECV = Arg('ptr', 'type(*), dimension(..), intent(inout), target, {buffer} :: {}', 'c_loc({})')
SIZE = Arg('size_t', 'integer(c_size_t), intent(in) :: {}')
# Counts and displacements, one per rank; the library copies them, so a
# compiler's copy of a section is fine even for a nonblocking call.
SIZES = Arg('size_t[]', 'integer(c_size_t), intent(in) :: {}(:)')
INT = Arg('int', 'integer(c_int), intent(in) :: {}')

# Each argument name of COLLECTIVES, and what it is.
ARGUMENTS = {
    'sendbuf': SEND,
    'recvbuf': RECV,
    'count': SIZE, 'sendcount': SIZE, 'recvcount': SIZE,
    'sendcounts': SIZES, 'recvcounts': SIZES, 'displs': SIZES, 'sdispls': SIZES, 'rdispls': SIZES,
    'datatype': INT, 'op': INT, 'root': INT,
    'comm': Arg('ptr', 'type(chorus_comm_t), intent(in) :: {}', '{}%ptr'),
    'stream': Arg('ptr', 'type(c_ptr), intent(in) :: {}'),  # a cudaStream_t, or c_null_ptr
    'request': Arg('ptr*', 'type(chorus_request_t), intent(out) :: {}', '{}%ptr'),
}

# The other functions, whose wrappers (in chorus_core.F90) are each a little
# different: their interfaces only, written as C prototypes whose types are
# kinds of C_KINDS (the result's, of RESULTS). The interface of chorus_<name>
# is c_<name>; of strlen, c_strlen. chorus_comm_create_f is in
# chorus_fortran.c: MPI_Comm_f2c, then chorus_comm_create.
OTHERS = """
    size_t strlen(ptr s)
    ptr chorus_get_error_string(int result)
    ptr chorus_comm_last_error(ptr comm)
    int chorus_comm_create_f(int mpi_handle, ptr* comm)
    int chorus_comm_destroy(ptr comm)
    int chorus_comm_abort(ptr comm)
    int chorus_comm_set_label(ptr comm, ptr label)
    int chorus_comm_set_idle(ptr comm, funptr fn, ptr arg)
    int chorus_comm_rank(ptr comm, int* rank)
    int chorus_comm_size(ptr comm, int* size)
    int chorus_test(ptr request, int* done)
    int chorus_wait(ptr request)
"""

# ------------------------------------------------------------- the generator

HEADER = '! {file} - generated by lib/fortran/bindings.py from its table; do not edit.\n'


def wrap(line, indent):
    """The line as free-form Fortran lines within 110 columns: broken after
    a comma, continued with & and four more spaces."""
    out = []
    while len(line) > 110:
        cut = line.rindex(', ', 0, 108) + 1
        out.append(line[:cut] + ' &')
        line = ' ' * (indent + 4) + line[cut:].lstrip()
    return '\n'.join(out + [line])


def collectives():
    """(name without chorus_, [(argument, Arg)], nonblocking) for every
    collective and its twin."""
    for name, args in COLLECTIVES:
        args = [(a, ARGUMENTS[a]) for a in args.split()]
        yield name, args, False
        yield 'i' + name, args + [('request', ARGUMENTS['request'])], True


def interface(fname, cname, result, args):
    """A bind(C) interface: args are (name, C_KINDS kind); the result is
    named r."""
    names = ', '.join(a for a, _ in args)
    decls = [C_KINDS[kind].format(a) for a, kind in args] + [RESULTS[result] + ' :: r']
    kinds = sorted(set(re.findall(r'\b(c_int|c_size_t|c_ptr|c_funptr)\b', ' '.join(decls))))
    return '\n'.join([
        wrap(f"    function {fname}({names}) bind(C, name='{cname}') result(r)", 4),
        '      import :: ' + ', '.join(kinds),
    ] + ['      ' + d for d in decls] + ['    end function', ''])


def chorus_c():
    out = [HEADER.format(file='chorus_c.f90'),
           '! The C functions that the module `chorus` calls, one bind(C) interface each.',
           'module chorus_c',
           '  use, intrinsic :: iso_c_binding',
           '  implicit none',
           '',
           '  interface']
    for line in OTHERS.strip().split('\n'):
        result, cname, args = re.match(r'\s*(\S+) (\w+)\((.*)\)$', line).groups()
        args = [a.split()[::-1] for a in args.split(', ')]
        out.append(interface(re.sub('^(chorus_)?', 'c_', cname), cname, result, args))
    for name, args, _ in collectives():
        out.append(interface('c_' + name, 'chorus_' + name, 'int', [(a, arg.c) for a, arg in args]))
    out += ['  end interface', '', 'end module chorus_c', '']
    return '\n'.join(out)


def wrapper(name, args, nonblocking):
    """The Fortran function chorus_<name>, which calls c_<name>."""
    fname, cname = 'chorus_' + name, 'c_' + name
    names = ', '.join(a for a, _ in args)
    buffer = 'asynchronous' if nonblocking else 'contiguous'
    lines = [wrap(f'  integer(c_int) function {fname}({names}) result(rc)', 2)]
    lines += ['    ' + arg.fortran.format(a, buffer=buffer) for a, arg in args]
    if nonblocking and 'sendbuf' in dict(args):
        lines.append(wrap(f"    if (.not. contiguous_buffers('{fname}', comm, is_contiguous(sendbuf), "
                          'is_contiguous(recvbuf), rc)) return', 4))
    passed = ', '.join(arg.passed.format(a) for a, arg in args)
    lines += [wrap(f'    rc = {cname}({passed})', 4), '  end function', '']
    return '\n'.join(lines)


def chorus_collectives():
    out = [HEADER.format(file='chorus_collectives.f90'),
           '! The collectives of the module `chorus`, each with its nonblocking twin:',
           '! Fortran buffers and handles around the interfaces of chorus_c.f90.',
           'module chorus_collectives',
           '  use, intrinsic :: iso_c_binding',
           '  use chorus_c',
           '  use chorus_core, only: chorus_comm_t, chorus_request_t, contiguous_buffers',
           '  implicit none',
           '  private',
           '']
    for name, _ in COLLECTIVES:
        out.append(f'  public :: chorus_{name}, chorus_i{name}')
    out += ['', 'contains', '']
    out += [wrapper(*c) for c in collectives()]
    out += ['end module chorus_collectives', '']
    return '\n'.join(out)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    for path, text in zip(sys.argv[1:], (chorus_c(), chorus_collectives())):
        with open(path, 'w') as f:
            f.write(text)


if __name__ == '__main__':
    main()
