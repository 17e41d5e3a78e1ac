#include "rpc/tls_certificates.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <openssl/asn1.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <ctime>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "rpc/openssl_ptr.h"
#include "runtime/util/atomic_file_writer.h"
#include "runtime/util/status_macros.h"

namespace distrt::rpc {
namespace {

constexpr char kCurve[] = "P-256";
// RFC 5280's ub-common-name; OpenSSL refuses longer ones with a less clear
// error.
constexpr size_t kMaxCommonNameBytes = 64;
constexpr absl::Duration kMinValidity = absl::Seconds(1);
constexpr absl::Duration kMaxValidity = absl::Hours(24 * 365 * 100);
// How long before its making a certificate is already valid: for clocks a
// little behind the one of the machine that made it.
constexpr absl::Duration kBackdating = absl::Hours(1);
constexpr int kSerialBytes = 16;
constexpr mode_t kCertificateFileMode = 0644;
constexpr mode_t kKeyFileMode = 0600;
constexpr char kCaFileName[] = "ca.pem";
constexpr char kCertificateFileName[] = "cert.pem";
constexpr char kKeyFileName[] = "key.pem";

using BioPtr = OpenSslPtr<BIO, BIO_free>;
using BignumPtr = OpenSslPtr<BIGNUM, BN_free>;
using Asn1StringPtr = OpenSslPtr<ASN1_STRING, ASN1_STRING_free>;
using GeneralNamePtr = OpenSslPtr<GENERAL_NAME, GENERAL_NAME_free>;
using GeneralNamesPtr = OpenSslPtr<GENERAL_NAMES, GENERAL_NAMES_free>;
using KeyPtr = OpenSslPtr<EVP_PKEY, EVP_PKEY_free>;
using X509Ptr = OpenSslPtr<X509, X509_free>;
using ExtensionPtr = OpenSslPtr<X509_EXTENSION, X509_EXTENSION_free>;

// Empties this thread's OpenSSL error queue into one line, so that a status
// says what OpenSSL said and no stale error is blamed on a later call.
std::string TakeOpenSslErrors() {
  std::vector<std::string> errors;
  const char* data = nullptr;
  int flags = 0;
  while (unsigned long error =
             ERR_get_error_all(nullptr, nullptr, nullptr, &data, &flags)) {
    char text[256];
    ERR_error_string_n(error, text, sizeof(text));
    if (data != nullptr && (flags & ERR_TXT_STRING) != 0 && data[0] != '\0') {
      errors.push_back(absl::StrCat(text, " (", data, ")"));
    } else {
      errors.push_back(text);
    }
  }
  if (errors.empty()) return "OpenSSL reported no error";
  return absl::StrJoin(errors, "; ");
}

// INTERNAL: libcrypto failed at something that valid input cannot make fail
// (out of memory, a broken installation).
absl::Status OpenSslError(absl::string_view doing) {
  return absl::InternalError(
      absl::StrCat(doing, " failed: ", TakeOpenSslErrors()));
}

absl::Status CheckCommonNameAndValidity(absl::string_view common_name,
                                        absl::Duration valid_for,
                                        absl::string_view doing) {
  if (common_name.empty() || common_name.size() > kMaxCommonNameBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        doing, ": the common name \"", absl::CHexEscape(common_name),
        "\" must have 1 to ", kMaxCommonNameBytes, " bytes"));
  }
  if (valid_for < kMinValidity || valid_for > kMaxValidity) {
    return absl::InvalidArgumentError(
        absl::StrCat(doing, ": the validity ", absl::FormatDuration(valid_for),
                     " is not between ", absl::FormatDuration(kMinValidity),
                     " and 100 years"));
  }
  return absl::OkStatus();
}

// The 16 bytes of `host` when it is an IPv6 address, 4 when IPv4, else
// empty.
std::string IpAddressBytes(const std::string& host) {
  // inet_pton reads up to a NUL; "127.0.0.1\0x" is not an address.
  if (host.find('\0') != std::string::npos) return "";
  unsigned char address[16];
  if (inet_pton(AF_INET, host.c_str(), address) == 1) {
    return std::string(reinterpret_cast<const char*>(address), 4);
  }
  if (inet_pton(AF_INET6, host.c_str(), address) == 1) {
    return std::string(reinterpret_cast<const char*>(address), 16);
  }
  return "";
}

// Whether `host` can be a DNS subjectAltName that verifiers match: labels
// of letters, digits, '-' and '_', the first possibly "*". A wildcard needs
// two labels after it: OpenSSL (and so gRPC) matches none on "*.com".
bool IsDnsName(absl::string_view host) {
  if (host.empty() || host.size() > 253) return false;
  std::vector<absl::string_view> labels = absl::StrSplit(host, '.');
  for (size_t i = 0; i < labels.size(); ++i) {
    absl::string_view label = labels[i];
    if (label.empty() || label.size() > 63) return false;
    if (label == "*" && i == 0) {
      if (labels.size() < 3) return false;
      continue;
    }
    for (char c : label) {
      if (!absl::ascii_isalnum(c) && c != '-' && c != '_') return false;
    }
  }
  return true;
}

// The subjectAltNames for `hosts`: IP names for addresses, DNS names for
// the rest.
absl::StatusOr<GeneralNamesPtr> SubjectAltNames(
    const std::vector<std::string>& hosts, absl::string_view doing) {
  if (hosts.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(doing,
                     ": no hosts; a certificate must name at least "
                     "one host that its servers are reached by"));
  }
  GeneralNamesPtr names(sk_GENERAL_NAME_new_null());
  if (names == nullptr) return OpenSslError(doing);
  for (const std::string& host : hosts) {
    const std::string ip = IpAddressBytes(host);
    int type;
    Asn1StringPtr value;
    if (!ip.empty()) {
      type = GEN_IPADD;
      value.reset(ASN1_OCTET_STRING_new());
      if (value == nullptr ||
          ASN1_OCTET_STRING_set(
              value.get(), reinterpret_cast<const unsigned char*>(ip.data()),
              static_cast<int>(ip.size())) != 1) {
        return OpenSslError(doing);
      }
    } else if (IsDnsName(host)) {
      type = GEN_DNS;
      value.reset(ASN1_IA5STRING_new());
      if (value == nullptr ||
          ASN1_STRING_set(value.get(), host.data(),
                          static_cast<int>(host.size())) != 1) {
        return OpenSslError(doing);
      }
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          doing, ": host \"", absl::CHexEscape(host),
          "\" is neither an IP address nor a DNS name (labels of letters, "
          "digits, '-' and '_'; a wildcard only as the first of three or "
          "more, as in *.default.svc)"));
    }
    GeneralNamePtr name(GENERAL_NAME_new());
    if (name == nullptr) return OpenSslError(doing);
    GENERAL_NAME_set0_value(name.get(), type, value.release());
    if (sk_GENERAL_NAME_push(names.get(), name.get()) == 0) {
      return OpenSslError(doing);
    }
    name.release();  // now owned by `names`
  }
  return names;
}

absl::StatusOr<std::string> PemText(absl::string_view doing,
                                    const std::function<int(BIO*)>& write) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (bio == nullptr || write(bio.get()) != 1) return OpenSslError(doing);
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio.get(), &data);
  if (size <= 0 || data == nullptr) return OpenSslError(doing);
  return std::string(data, static_cast<size_t>(size));
}

// What the two kinds of certificate differ in.
struct Profile {
  bool is_authority;
  X509* issuer;          // null: self-signed
  EVP_PKEY* issuer_key;  // null: self-signed
  GENERAL_NAMES* hosts;  // null for an authority
};

// Gives `certificate` a random serial number of kSerialBytes bytes.
absl::Status SetSerialNumber(X509* certificate, absl::string_view what,
                             absl::string_view making) {
  unsigned char serial_bytes[kSerialBytes];
  if (RAND_bytes(serial_bytes, sizeof(serial_bytes)) != 1) {
    return OpenSslError(absl::StrCat("drawing a serial number for ", what));
  }
  BignumPtr serial(BN_bin2bn(serial_bytes, sizeof(serial_bytes), nullptr));
  if (serial == nullptr ||
      BN_to_ASN1_INTEGER(serial.get(), X509_get_serialNumber(certificate)) ==
          nullptr) {
    return OpenSslError(making);
  }
  return absl::OkStatus();
}

// Sets the subject to `common_name` and the issuer to the profile's issuer
// (to the subject itself when self-signed).
absl::Status SetSubjectAndIssuer(X509* certificate,
                                 absl::string_view common_name,
                                 const Profile& profile, absl::string_view what,
                                 absl::string_view making) {
  X509_NAME* subject = X509_get_subject_name(certificate);
  if (X509_NAME_add_entry_by_NID(
          subject, NID_commonName, MBSTRING_UTF8,
          reinterpret_cast<const unsigned char*>(common_name.data()),
          static_cast<int>(common_name.size()), -1, 0) != 1) {
    // A name that passed the length check fails here when it is not UTF-8.
    return absl::InvalidArgumentError(
        absl::StrCat("cannot make ", what,
                     ": the common name is not accepted (not UTF-8?): ",
                     TakeOpenSslErrors()));
  }
  X509_NAME* issuer_name = profile.issuer == nullptr
                               ? subject
                               : X509_get_subject_name(profile.issuer);
  if (X509_set_issuer_name(certificate, issuer_name) != 1) {
    return OpenSslError(making);
  }
  return absl::OkStatus();
}

// Makes `certificate` valid from kBackdating ago until `valid_for` from now.
absl::Status SetValidity(X509* certificate, absl::Duration valid_for,
                         absl::string_view what) {
  std::time_t now = absl::ToTimeT(absl::Now());
  const int64_t valid_seconds = absl::ToInt64Seconds(valid_for);
  if (X509_time_adj_ex(X509_getm_notBefore(certificate), 0,
                       -static_cast<long>(absl::ToInt64Seconds(kBackdating)),
                       &now) == nullptr ||
      X509_time_adj_ex(X509_getm_notAfter(certificate),
                       static_cast<int>(valid_seconds / 86400),
                       static_cast<long>(valid_seconds % 86400),
                       &now) == nullptr) {
    return OpenSslError(absl::StrCat("setting the validity of ", what));
  }
  return absl::OkStatus();
}

struct Extension {
  int nid;
  const char* value;  // in OpenSSL's configuration syntax
};

// The X.509v3 extensions, other than subjectAltName, that the profile's kind
// of certificate carries.
std::vector<Extension> ExtensionsFor(const Profile& profile) {
  if (profile.is_authority) {
    return {
        {NID_basic_constraints, "critical,CA:TRUE"},
        {NID_key_usage, "critical,keyCertSign,cRLSign"},
        {NID_subject_key_identifier, "hash"},
    };
  }
  std::vector<Extension> extensions = {
      {NID_basic_constraints, "critical,CA:FALSE"},
      {NID_key_usage, "critical,digitalSignature"},
      {NID_ext_key_usage, "serverAuth,clientAuth"},
      {NID_subject_key_identifier, "hash"},
  };
  // Lets a verifier tell apart CAs of one name by their keys. Only when
  // the CA states its key's identifier (ours do): without one, OpenSSL
  // would write an empty extension.
  if (X509_get0_subject_key_id(profile.issuer) != nullptr) {
    extensions.push_back({NID_authority_key_identifier, "keyid"});
  }
  return extensions;
}

// Adds the profile's extensions and, for a host certificate, its
// subjectAltNames. Needs the public key set (for the key identifiers).
absl::Status AddExtensions(X509* certificate, const Profile& profile,
                           absl::string_view what) {
  X509V3_CTX context;
  X509V3_set_ctx(&context,
                 profile.issuer == nullptr ? certificate : profile.issuer,
                 certificate, nullptr, nullptr, 0);
  for (const Extension& extension : ExtensionsFor(profile)) {
    ExtensionPtr made(X509V3_EXT_nconf_nid(nullptr, &context, extension.nid,
                                           extension.value));
    // X509_add_ext copies the extension.
    if (made == nullptr || X509_add_ext(certificate, made.get(), -1) != 1) {
      return OpenSslError(absl::StrCat("adding ", OBJ_nid2sn(extension.nid),
                                       " ", extension.value, " to ", what));
    }
  }
  if (profile.hosts != nullptr &&
      X509_add1_ext_i2d(certificate, NID_subject_alt_name, profile.hosts, 0,
                        X509V3_ADD_DEFAULT) != 1) {
    return OpenSslError(absl::StrCat("adding subjectAltName to ", what));
  }
  return absl::OkStatus();
}

// `certificate` and `key` as PEM text.
absl::StatusOr<PemKeyPair> ToPem(X509* certificate, EVP_PKEY* key,
                                 absl::string_view what) {
  absl::StatusOr<std::string> certificate_pem =
      PemText(absl::StrCat("writing ", what, " as PEM"),
              [&](BIO* bio) { return PEM_write_bio_X509(bio, certificate); });
  RETURN_IF_ERROR(certificate_pem.status());
  absl::StatusOr<std::string> key_pem = PemText(
      absl::StrCat("writing the key of ", what, " as PEM"), [&](BIO* bio) {
        return PEM_write_bio_PrivateKey(bio, key, nullptr, nullptr, 0, nullptr,
                                        nullptr);
      });
  RETURN_IF_ERROR(key_pem.status());
  return PemKeyPair{*std::move(certificate_pem), *std::move(key_pem)};
}

// A new key and a certificate for it, as `profile` says. `what` names the
// certificate in errors ("the certificate for \"ps-0\"").
absl::StatusOr<PemKeyPair> MakeCertificate(absl::string_view common_name,
                                           absl::Duration valid_for,
                                           const Profile& profile,
                                           absl::string_view what) {
  const std::string making = absl::StrCat("making ", what);
  KeyPtr key(EVP_EC_gen(kCurve));
  if (key == nullptr) {
    return OpenSslError(
        absl::StrCat("generating a ", kCurve, " key for ", what));
  }

  X509Ptr certificate(X509_new());
  if (certificate == nullptr ||
      X509_set_version(certificate.get(), X509_VERSION_3) != 1) {
    return OpenSslError(making);
  }
  RETURN_IF_ERROR(SetSerialNumber(certificate.get(), what, making));
  RETURN_IF_ERROR(SetSubjectAndIssuer(certificate.get(), common_name, profile,
                                      what, making));
  RETURN_IF_ERROR(SetValidity(certificate.get(), valid_for, what));
  if (X509_set_pubkey(certificate.get(), key.get()) != 1) {
    return OpenSslError(making);
  }
  RETURN_IF_ERROR(AddExtensions(certificate.get(), profile, what));

  EVP_PKEY* signing_key =
      profile.issuer_key == nullptr ? key.get() : profile.issuer_key;
  if (X509_sign(certificate.get(), signing_key, EVP_sha256()) <= 0) {
    return OpenSslError(absl::StrCat("signing ", what));
  }
  return ToPem(certificate.get(), key.get(), what);
}

// Writes `contents` to `path` atomically, the file getting exactly `mode`
// (a key is never readable by others, not even while it is written).
absl::Status WriteFile(const std::string& path, absl::string_view contents,
                       mode_t mode) {
  AtomicFileWriter::Options options;
  options.mode = mode;
  ASSIGN_OR_RETURN(std::unique_ptr<AtomicFileWriter> file,
                   AtomicFileWriter::Create(path, options));
  RETURN_IF_ERROR(file->Append(contents));
  return file->Commit();
}

}  // namespace

absl::StatusOr<PemKeyPair> GenerateCertificateAuthority(
    absl::string_view common_name, absl::Duration valid_for) {
  ERR_clear_error();  // so that no earlier failure is reported as ours
  const std::string what = absl::StrCat("the CA certificate \"",
                                        absl::CHexEscape(common_name), "\"");
  RETURN_IF_ERROR(CheckCommonNameAndValidity(common_name, valid_for,
                                             "cannot make " + what));
  return MakeCertificate(common_name, valid_for,
                         {/*is_authority=*/true, /*issuer=*/nullptr,
                          /*issuer_key=*/nullptr, /*hosts=*/nullptr},
                         what);
}

absl::StatusOr<PemKeyPair> IssueCertificate(
    const PemKeyPair& ca, absl::string_view common_name,
    const std::vector<std::string>& hosts, absl::Duration valid_for) {
  ERR_clear_error();
  const std::string what = absl::StrCat("the certificate for \"",
                                        absl::CHexEscape(common_name), "\"");
  const std::string cannot = "cannot issue " + what;
  RETURN_IF_ERROR(CheckCommonNameAndValidity(common_name, valid_for, cannot));
  ASSIGN_OR_RETURN(GeneralNamesPtr names, SubjectAltNames(hosts, cannot));

  BioPtr ca_certificate_bio(BIO_new_mem_buf(
      ca.certificate_pem.data(), static_cast<int>(ca.certificate_pem.size())));
  if (ca_certificate_bio == nullptr) return OpenSslError(cannot);
  X509Ptr ca_certificate(
      PEM_read_bio_X509(ca_certificate_bio.get(), nullptr, nullptr, nullptr));
  if (ca_certificate == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        cannot, ": the CA's certificate_pem is not a PEM certificate (",
        TakeOpenSslErrors(), ")"));
  }
  BioPtr ca_key_bio(BIO_new_mem_buf(
      ca.private_key_pem.data(), static_cast<int>(ca.private_key_pem.size())));
  if (ca_key_bio == nullptr) return OpenSslError(cannot);
  // An empty passphrase callback: an encrypted key fails instead of
  // prompting on the terminal.
  KeyPtr ca_key(PEM_read_bio_PrivateKey(
      ca_key_bio.get(), nullptr, [](char*, int, int, void*) { return 0; },
      nullptr));
  if (ca_key == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        cannot,
        ": the CA's private_key_pem is not an unencrypted PEM private key (",
        TakeOpenSslErrors(), ")"));
  }
  char ca_name[256] = "";
  X509_NAME_oneline(X509_get_subject_name(ca_certificate.get()), ca_name,
                    sizeof(ca_name));
  if (X509_check_private_key(ca_certificate.get(), ca_key.get()) != 1) {
    ERR_clear_error();
    return absl::InvalidArgumentError(
        absl::StrCat(cannot,
                     ": the CA's private_key_pem is not the key of its "
                     "certificate_pem (",
                     ca_name, ")"));
  }
  if (X509_check_ca(ca_certificate.get()) == 0) {
    ERR_clear_error();
    return absl::InvalidArgumentError(absl::StrCat(
        cannot, ": the CA's certificate_pem (", ca_name,
        ") is not a CA certificate (basicConstraints CA:TRUE, keyUsage "
        "keyCertSign)"));
  }
  return MakeCertificate(
      common_name, valid_for,
      {/*is_authority=*/false, ca_certificate.get(), ca_key.get(), names.get()},
      what);
}

absl::StatusOr<TlsFilePaths> WriteTlsFiles(const std::string& dir,
                                           const PemKeyPair& ca,
                                           const PemKeyPair& certificate) {
  const std::string prefix = dir.empty() || dir.back() == '/' ? dir : dir + "/";
  TlsFilePaths paths;
  paths.ca_file = prefix + kCaFileName;
  paths.cert_file = prefix + kCertificateFileName;
  paths.key_file = prefix + kKeyFileName;
  RETURN_IF_ERROR(
      WriteFile(paths.ca_file, ca.certificate_pem, kCertificateFileMode));
  RETURN_IF_ERROR(WriteFile(paths.cert_file, certificate.certificate_pem,
                            kCertificateFileMode));
  RETURN_IF_ERROR(
      WriteFile(paths.key_file, certificate.private_key_pem, kKeyFileMode));
  return paths;
}

}  // namespace distrt::rpc
