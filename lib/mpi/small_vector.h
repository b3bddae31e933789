// A vector of trivially copyable elements that keeps up to N of them inline:
// the per-rank counts and displacements of a call on a communicator of up to
// N ranks cost no allocation (the interposer builds several per call).
#pragma once

#include <cstddef>
#include <cstring>
#include <memory>
#include <type_traits>

namespace chorus_mpi {

template <typename T, size_t N>
class SmallVector {
    static_assert(std::is_trivially_copyable<T>::value, "elements are copied as bytes");

public:
    SmallVector() = default;
    SmallVector(const SmallVector& o) { copy_from(o); }
    SmallVector& operator=(const SmallVector& o) {
        if (this != &o) copy_from(o);
        return *this;
    }
    SmallVector(SmallVector&& o) noexcept { take(o); }
    SmallVector& operator=(SmallVector&& o) noexcept {
        if (this != &o) take(o);
        return *this;
    }

    size_t size() const { return size_; }
    bool empty() const { return size_ == 0; }
    T* data() { return heap_ ? heap_.get() : inline_; }
    const T* data() const { return heap_ ? heap_.get() : inline_; }
    T& operator[](size_t i) { return data()[i]; }
    const T& operator[](size_t i) const { return data()[i]; }
    T* begin() { return data(); }
    T* end() { return data() + size_; }
    const T* begin() const { return data(); }
    const T* end() const { return data() + size_; }

    // New elements are value-initialized (zero).
    void resize(size_t n) {
        reserve(n);
        for (size_t i = size_; i < n; ++i) data()[i] = T{};
        size_ = n;
    }
    void assign(size_t n, const T& v) {
        reserve(n);
        for (size_t i = 0; i < n; ++i) data()[i] = v;
        size_ = n;
    }
    template <typename It, typename = std::enable_if_t<!std::is_integral<It>::value>>
    void assign(It first, It last) {
        const auto n = static_cast<size_t>(last - first);
        reserve(n);
        for (size_t i = 0; i < n; ++i) data()[i] = static_cast<T>(first[i]);
        size_ = n;
    }

private:
    void reserve(size_t n) {
        if (n <= capacity_) return;
        std::unique_ptr<T[]> bigger(new T[n]);
        if (size_) std::memcpy(bigger.get(), data(), size_ * sizeof(T));
        heap_ = std::move(bigger);
        capacity_ = n;
    }
    void copy_from(const SmallVector& o) {
        reserve(o.size_);
        if (o.size_) std::memcpy(data(), o.data(), o.size_ * sizeof(T));
        size_ = o.size_;
    }
    void take(SmallVector& o) {
        if (o.heap_) {
            heap_ = std::move(o.heap_);
            capacity_ = o.capacity_;
            size_ = o.size_;
            o.capacity_ = N;
        } else {
            copy_from(o);
        }
        o.size_ = 0;
    }

    T inline_[N];  // elements past size_ are never read
    std::unique_ptr<T[]> heap_;
    size_t size_ = 0;
    size_t capacity_ = N;
};

}  // namespace chorus_mpi
