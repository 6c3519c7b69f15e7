/* A stand-in for a ledger writer outside the interpreter, for bench_ledger_native.py; not part of the package.
 *
 * The asking thread hands each rule answer's row over as three numbers (its time, its latency, its stem's number)
 * into a ring of C structs; a thread of this module's own takes them a batch at a time and binds them to a
 * prepared multi-row INSERT on a SQLite connection of its own. It never takes the interpreter lock and never
 * touches a Python object, so the asking thread neither waits for it nor pays for objects freed on another
 * core: what the file ledger's Python writer costs (README, Figures) and this one does not.
 *
 * What it leaves out, and a real one could not: retries and the spool for a refused batch (it counts the rows
 * SQLite refused), flush(), fork, a stem table kept by the writer itself (the benchmark makes one beforehand). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <pthread.h>
#include <sqlite3.h>
#include <time.h>

typedef struct {
    double started, latency;
    long long stem;
} Row;

typedef struct {
    PyObject_HEAD
    Row *ring;           /* cap rows; head and tail count up for ever, a row's slot is its count modulo cap */
    size_t cap, head, tail;
    int batch, stop, started_thread;
    pthread_mutex_t lock;
    pthread_cond_t rows, room;
    pthread_t thread;
    sqlite3 *db;
    sqlite3_stmt *full, *one; /* BATCH rows and one row, each row bound as (time, latency, id tail, stem) */
    long long tail_count, written, refused;
} Writer;

/* ROWS stored: statements of a full batch, the rest one row at a time. Called by the writer thread alone. */
static void write_rows(Writer *w, const Row *rows, int count) {
    int done = 0;
    while (done < count) {
        int size = count - done >= w->batch ? w->batch : 1;
        sqlite3_stmt *statement = size == w->batch ? w->full : w->one;
        for (int i = 0; i < size; i++) {
            const Row *row = &rows[done + i];
            sqlite3_bind_double(statement, 4 * i + 1, row->started);
            sqlite3_bind_double(statement, 4 * i + 2, row->latency);
            sqlite3_bind_int64(statement, 4 * i + 3, w->tail_count++);
            sqlite3_bind_int64(statement, 4 * i + 4, row->stem);
        }
        if (sqlite3_step(statement) == SQLITE_DONE)
            w->written += size;
        else
            w->refused += size;
        sqlite3_reset(statement);
        done += size;
    }
}

static void *write_loop(void *argument) {
    Writer *w = argument;
    Row *taken = PyMem_RawMalloc(sizeof(Row) * w->cap);
    pthread_mutex_lock(&w->lock);
    for (;;) {
        /* A full batch, or whatever is there 0.1 s after the wait began (the Python writer's commit interval). */
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += 100000000;
        if (until.tv_nsec >= 1000000000) {
            until.tv_sec += 1;
            until.tv_nsec -= 1000000000;
        }
        while (w->head - w->tail < (size_t)w->batch && !w->stop)
            if (pthread_cond_timedwait(&w->rows, &w->lock, &until) != 0)
                break;
        size_t count = w->head - w->tail;
        if (count > (size_t)w->batch)
            count = w->batch;
        for (size_t i = 0; taken != NULL && i < count; i++)
            taken[i] = w->ring[(w->tail + i) % w->cap];
        w->tail += count;
        pthread_cond_broadcast(&w->room);
        int stopping = w->stop && w->head == w->tail;
        pthread_mutex_unlock(&w->lock);
        if (count > 0 && taken != NULL)
            write_rows(w, taken, (int)count);
        else if (count > 0)
            w->refused += count; /* no memory to take them into */
        pthread_mutex_lock(&w->lock);
        if (stopping)
            break;
    }
    pthread_mutex_unlock(&w->lock);
    PyMem_RawFree(taken);
    return NULL;
}

static int Writer_init(Writer *w, PyObject *args, PyObject *kwargs) {
    const char *path, *full_sql, *one_sql;
    int batch;
    Py_ssize_t cap;
    if (!PyArg_ParseTuple(args, "sssin:Writer", &path, &full_sql, &one_sql, &batch, &cap))
        return -1;
    if (w->ring != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "Writer is already set up");
        return -1;
    }
    if (batch < 1 || cap < batch) {
        PyErr_SetString(PyExc_ValueError, "need 1 <= batch <= capacity");
        return -1;
    }
    w->ring = PyMem_RawCalloc(cap, sizeof(Row));
    if (w->ring == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    w->cap = cap;
    w->batch = batch;
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->rows, NULL);
    pthread_cond_init(&w->room, NULL);
    int opened = sqlite3_open(path, &w->db);
    if (opened == SQLITE_OK) {
        sqlite3_busy_timeout(w->db, 1000);
        opened = sqlite3_exec(w->db, "PRAGMA synchronous=NORMAL", NULL, NULL, NULL);
    }
    if (opened == SQLITE_OK)
        opened = sqlite3_prepare_v2(w->db, full_sql, -1, &w->full, NULL);
    if (opened == SQLITE_OK)
        opened = sqlite3_prepare_v2(w->db, one_sql, -1, &w->one, NULL);
    if (opened != SQLITE_OK) {
        PyErr_Format(PyExc_OSError, "SQLite: %s", w->db ? sqlite3_errmsg(w->db) : "out of memory");
        return -1;
    }
    if (pthread_create(&w->thread, NULL, write_loop, w) != 0) {
        PyErr_SetString(PyExc_OSError, "could not start the writer thread");
        return -1;
    }
    w->started_thread = 1;
    return 0;
}

/* push(time, latency, stem): one row handed over; waits (without the interpreter lock) while the ring is full. */
static PyObject *Writer_push(Writer *w, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "push(time, latency, stem)");
        return NULL;
    }
    if (!w->started_thread) {
        PyErr_SetString(PyExc_RuntimeError, "the writer is closed");
        return NULL;
    }
    double started = PyFloat_AsDouble(args[0]), latency = PyFloat_AsDouble(args[1]);
    long long stem = PyLong_AsLongLong(args[2]);
    if (PyErr_Occurred())
        return NULL;
    pthread_mutex_lock(&w->lock);
    if (w->head - w->tail >= w->cap) {
        Py_BEGIN_ALLOW_THREADS
        while (w->head - w->tail >= w->cap)
            pthread_cond_wait(&w->room, &w->lock);
        Py_END_ALLOW_THREADS
    }
    Row *row = &w->ring[w->head % w->cap];
    row->started = started;
    row->latency = latency;
    row->stem = stem;
    w->head += 1;
    if (w->head - w->tail == (size_t)w->batch)
        pthread_cond_signal(&w->rows);
    pthread_mutex_unlock(&w->lock);
    Py_RETURN_NONE;
}

static void stop_thread(Writer *w) {
    if (!w->started_thread)
        return;
    pthread_mutex_lock(&w->lock);
    w->stop = 1;
    pthread_cond_signal(&w->rows);
    pthread_mutex_unlock(&w->lock);
    pthread_join(w->thread, NULL);
    w->started_thread = 0;
}

/* close() -> (pushed, written, refused): every row pushed is written or refused before it returns. */
static PyObject *Writer_close(Writer *w, PyObject *unused) {
    Py_BEGIN_ALLOW_THREADS
    stop_thread(w);
    Py_END_ALLOW_THREADS
    return Py_BuildValue("nLL", (Py_ssize_t)w->head, w->written, w->refused);
}

static void Writer_dealloc(Writer *w) {
    Py_BEGIN_ALLOW_THREADS
    stop_thread(w);
    Py_END_ALLOW_THREADS
    sqlite3_finalize(w->full);
    sqlite3_finalize(w->one);
    sqlite3_close(w->db);
    PyMem_RawFree(w->ring);
    Py_TYPE(w)->tp_free((PyObject *)w);
}

static PyMethodDef Writer_methods[] = {
    {"push", (PyCFunction)(void (*)(void))Writer_push, METH_FASTCALL, "push(time, latency, stem)"},
    {"close", (PyCFunction)Writer_close, METH_NOARGS, "close() -> (pushed, written, refused)"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject WriterType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "native_writer.Writer",
    .tp_basicsize = sizeof(Writer),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Writer(path, batch_sql, row_sql, batch, capacity)",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Writer_init,
    .tp_dealloc = (destructor)Writer_dealloc,
    .tp_methods = Writer_methods,
};

static struct PyModuleDef native_writer = {PyModuleDef_HEAD_INIT, "native_writer", NULL, -1, NULL};

PyMODINIT_FUNC PyInit_native_writer(void) {
    if (PyType_Ready(&WriterType) < 0)
        return NULL;
    PyObject *module = PyModule_Create(&native_writer);
    if (module == NULL)
        return NULL;
    Py_INCREF(&WriterType);
    if (PyModule_AddObject(module, "Writer", (PyObject *)&WriterType) < 0) {
        Py_DECREF(&WriterType);
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
