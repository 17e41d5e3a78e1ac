#include "rpc/tls_certificates.h"

#include <arpa/inet.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>

#include <cstdint>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rpc/openssl_ptr.h"
#include "runtime/util/test_dir.h"

namespace distrt::rpc {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::UnorderedElementsAre;

using BioPtr = OpenSslPtr<BIO, BIO_free>;
using KeyPtr = OpenSslPtr<EVP_PKEY, EVP_PKEY_free>;
using X509Ptr = OpenSslPtr<X509, X509_free>;
using StorePtr = OpenSslPtr<X509_STORE, X509_STORE_free>;
using StoreContextPtr = OpenSslPtr<X509_STORE_CTX, X509_STORE_CTX_free>;
using BasicConstraintsPtr =
    OpenSslPtr<BASIC_CONSTRAINTS, BASIC_CONSTRAINTS_free>;
using GeneralNamesPtr = OpenSslPtr<GENERAL_NAMES, GENERAL_NAMES_free>;
using KeyUsagesPtr = OpenSslPtr<EXTENDED_KEY_USAGE, EXTENDED_KEY_USAGE_free>;
using BignumPtr = OpenSslPtr<BIGNUM, BN_free>;

constexpr absl::Duration kValidity = absl::Hours(24);

X509Ptr Certificate(const std::string& pem) {
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  X509Ptr certificate(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
  EXPECT_NE(certificate, nullptr) << pem;
  return certificate;
}

KeyPtr PrivateKey(const std::string& pem) {
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  KeyPtr key(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
  EXPECT_NE(key, nullptr);
  return key;
}

std::string CommonName(X509_NAME* name) {
  char text[256] = "";
  X509_NAME_get_text_by_NID(name, NID_commonName, text, sizeof(text));
  return text;
}

bool IsCritical(X509* certificate, int nid) {
  const int index = X509_get_ext_by_NID(certificate, nid, -1);
  EXPECT_GE(index, 0) << OBJ_nid2sn(nid);
  return index >= 0 &&
         X509_EXTENSION_get_critical(X509_get_ext(certificate, index)) == 1;
}

// X509_V_OK when `leaf_pem` verifies against the CA certificate `ca_pem`
// for `purpose`, matching `host` and `ip` unless empty; else OpenSSL's
// reason. Strict (X509_V_FLAG_X509_STRICT), so that what RFC 5280 asks of
// both certificates is checked as well.
int VerifyError(const std::string& leaf_pem, const std::string& ca_pem,
                int purpose = X509_PURPOSE_SSL_SERVER,
                const std::string& host = "", const std::string& ip = "") {
  X509Ptr leaf = Certificate(leaf_pem);
  X509Ptr ca = Certificate(ca_pem);
  StorePtr store(X509_STORE_new());
  EXPECT_EQ(X509_STORE_add_cert(store.get(), ca.get()), 1);
  StoreContextPtr context(X509_STORE_CTX_new());
  EXPECT_EQ(
      X509_STORE_CTX_init(context.get(), store.get(), leaf.get(), nullptr), 1);
  X509_STORE_CTX_set_purpose(context.get(), purpose);
  X509_VERIFY_PARAM* param = X509_STORE_CTX_get0_param(context.get());
  X509_VERIFY_PARAM_set_flags(param, X509_V_FLAG_X509_STRICT);
  if (!host.empty()) {
    X509_VERIFY_PARAM_set1_host(param, host.c_str(), 0);
  }
  if (!ip.empty()) {
    EXPECT_EQ(X509_VERIFY_PARAM_set1_ip_asc(param, ip.c_str()), 1);
  }
  const int ok = X509_verify_cert(context.get());
  const int error = X509_STORE_CTX_get_error(context.get());
  ERR_clear_error();
  EXPECT_EQ(ok == 1, error == X509_V_OK);
  return error;
}

std::string ErrorText(int error) {
  return X509_verify_cert_error_string(error);
}

std::string Ip(int family, const char* text) {
  unsigned char bytes[16];
  EXPECT_EQ(inet_pton(family, text, bytes), 1) << text;
  return std::string(reinterpret_cast<const char*>(bytes),
                     family == AF_INET ? 4 : 16);
}

// Seconds from now to `time` (negative: in the past).
int64_t SecondsFromNow(const ASN1_TIME* time) {
  int days = 0, seconds = 0;
  EXPECT_EQ(ASN1_TIME_diff(&days, &seconds, nullptr, time), 1);
  return int64_t{days} * 86400 + seconds;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

mode_t FileMode(const std::string& path) {
  struct stat info;
  EXPECT_EQ(stat(path.c_str(), &info), 0) << path;
  return info.st_mode & 07777;
}

class TlsCertificatesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<PemKeyPair> ca =
        GenerateCertificateAuthority("job CA", kValidity);
    ASSERT_TRUE(ca.ok()) << ca.status();
    ca_ = *ca;
    absl::StatusOr<PemKeyPair> leaf = IssueCertificate(
        ca_, "task", {"localhost", "127.0.0.1", "::1", "*.default.svc"},
        kValidity);
    ASSERT_TRUE(leaf.ok()) << leaf.status();
    leaf_ = *leaf;
  }

  PemKeyPair ca_;
  PemKeyPair leaf_;
};

TEST_F(TlsCertificatesTest, AuthorityIsSelfSignedCa) {
  X509Ptr ca = Certificate(ca_.certificate_pem);
  EXPECT_EQ(CommonName(X509_get_subject_name(ca.get())), "job CA");
  EXPECT_EQ(X509_NAME_cmp(X509_get_subject_name(ca.get()),
                          X509_get_issuer_name(ca.get())),
            0);
  EXPECT_EQ(X509_get_version(ca.get()), X509_VERSION_3);
  EXPECT_EQ(X509_get_signature_nid(ca.get()), NID_ecdsa_with_SHA256);
  KeyPtr key = PrivateKey(ca_.private_key_pem);
  EXPECT_EQ(X509_check_private_key(ca.get(), key.get()), 1);
  EXPECT_EQ(X509_verify(ca.get(), key.get()), 1);  // signed by its own key

  BasicConstraintsPtr constraints(static_cast<BASIC_CONSTRAINTS*>(
      X509_get_ext_d2i(ca.get(), NID_basic_constraints, nullptr, nullptr)));
  ASSERT_NE(constraints, nullptr);
  EXPECT_TRUE(constraints->ca);
  EXPECT_TRUE(IsCritical(ca.get(), NID_basic_constraints));
  EXPECT_EQ(X509_get_key_usage(ca.get()), KU_KEY_CERT_SIGN | KU_CRL_SIGN);
  EXPECT_TRUE(IsCritical(ca.get(), NID_key_usage));
  EXPECT_NE(X509_get0_subject_key_id(ca.get()), nullptr);
  EXPECT_EQ(X509_check_ca(ca.get()), 1);
}

TEST_F(TlsCertificatesTest, KeysAreP256) {
  for (const std::string& pem : {ca_.private_key_pem, leaf_.private_key_pem}) {
    EXPECT_THAT(pem, HasSubstr("-----BEGIN PRIVATE KEY-----"));
    KeyPtr key = PrivateKey(pem);
    ASSERT_NE(key, nullptr);
    EXPECT_EQ(EVP_PKEY_get_base_id(key.get()), EVP_PKEY_EC);
    char group[64] = "";
    size_t length = 0;
    ASSERT_EQ(EVP_PKEY_get_group_name(key.get(), group, sizeof(group), &length),
              1);
    EXPECT_STREQ(group, "prime256v1");
  }
}

TEST_F(TlsCertificatesTest, ValidityStartsAnHourAgo) {
  for (const std::string& pem : {ca_.certificate_pem, leaf_.certificate_pem}) {
    X509Ptr certificate = Certificate(pem);
    // A minute of slack for a slow test machine.
    EXPECT_NEAR(SecondsFromNow(X509_get0_notBefore(certificate.get())), -3600,
                60);
    EXPECT_NEAR(SecondsFromNow(X509_get0_notAfter(certificate.get())),
                absl::ToInt64Seconds(kValidity), 60);
  }
}

TEST_F(TlsCertificatesTest, LeafChainsToItsCaOnly) {
  EXPECT_EQ(VerifyError(leaf_.certificate_pem, ca_.certificate_pem), X509_V_OK)
      << ErrorText(VerifyError(leaf_.certificate_pem, ca_.certificate_pem));

  // Another CA, even of the same name, did not sign it.
  absl::StatusOr<PemKeyPair> other =
      GenerateCertificateAuthority("job CA", kValidity);
  ASSERT_TRUE(other.ok()) << other.status();
  const int error = VerifyError(leaf_.certificate_pem, other->certificate_pem);
  EXPECT_NE(error, X509_V_OK);
  EXPECT_NE(VerifyError(leaf_.certificate_pem, leaf_.certificate_pem),
            X509_V_OK);

  X509Ptr leaf = Certificate(leaf_.certificate_pem);
  X509Ptr ca = Certificate(ca_.certificate_pem);
  EXPECT_EQ(CommonName(X509_get_subject_name(leaf.get())), "task");
  EXPECT_EQ(X509_NAME_cmp(X509_get_issuer_name(leaf.get()),
                          X509_get_subject_name(ca.get())),
            0);
  EXPECT_EQ(X509_get_signature_nid(leaf.get()), NID_ecdsa_with_SHA256);
  EXPECT_EQ(X509_check_issued(ca.get(), leaf.get()), X509_V_OK);
}

TEST_F(TlsCertificatesTest, LeafServesServersAndClients) {
  EXPECT_EQ(VerifyError(leaf_.certificate_pem, ca_.certificate_pem,
                        X509_PURPOSE_SSL_SERVER),
            X509_V_OK);
  EXPECT_EQ(VerifyError(leaf_.certificate_pem, ca_.certificate_pem,
                        X509_PURPOSE_SSL_CLIENT),
            X509_V_OK);

  X509Ptr leaf = Certificate(leaf_.certificate_pem);
  KeyUsagesPtr usages(static_cast<EXTENDED_KEY_USAGE*>(
      X509_get_ext_d2i(leaf.get(), NID_ext_key_usage, nullptr, nullptr)));
  ASSERT_NE(usages, nullptr);
  std::vector<int> nids;
  for (int i = 0; i < sk_ASN1_OBJECT_num(usages.get()); ++i) {
    nids.push_back(OBJ_obj2nid(sk_ASN1_OBJECT_value(usages.get(), i)));
  }
  EXPECT_THAT(nids, UnorderedElementsAre(NID_server_auth, NID_client_auth));

  BasicConstraintsPtr constraints(static_cast<BASIC_CONSTRAINTS*>(
      X509_get_ext_d2i(leaf.get(), NID_basic_constraints, nullptr, nullptr)));
  ASSERT_NE(constraints, nullptr);
  EXPECT_FALSE(constraints->ca);
  EXPECT_EQ(X509_check_ca(leaf.get()), 0);
  EXPECT_EQ(X509_get_key_usage(leaf.get()), KU_DIGITAL_SIGNATURE);
  EXPECT_TRUE(IsCritical(leaf.get(), NID_key_usage));
}

TEST_F(TlsCertificatesTest, HostsBecomeIpAndDnsNames) {
  X509Ptr leaf = Certificate(leaf_.certificate_pem);
  GeneralNamesPtr names(static_cast<GENERAL_NAMES*>(
      X509_get_ext_d2i(leaf.get(), NID_subject_alt_name, nullptr, nullptr)));
  ASSERT_NE(names, nullptr);
  std::vector<std::string> dns, ips;
  for (int i = 0; i < sk_GENERAL_NAME_num(names.get()); ++i) {
    const GENERAL_NAME* name = sk_GENERAL_NAME_value(names.get(), i);
    int type = 0;
    const auto* value =
        static_cast<const ASN1_STRING*>(GENERAL_NAME_get0_value(name, &type));
    const std::string bytes(
        reinterpret_cast<const char*>(ASN1_STRING_get0_data(value)),
        ASN1_STRING_length(value));
    if (type == GEN_DNS) {
      dns.push_back(bytes);
    } else if (type == GEN_IPADD) {
      ips.push_back(bytes);
    } else {
      ADD_FAILURE() << "unexpected subjectAltName type " << type;
    }
  }
  EXPECT_THAT(dns, UnorderedElementsAre("localhost", "*.default.svc"));
  EXPECT_THAT(
      ips, UnorderedElementsAre(Ip(AF_INET, "127.0.0.1"), Ip(AF_INET6, "::1")));
}

TEST_F(TlsCertificatesTest, VerifierMatchesTheHostsOnly) {
  const std::string& leaf = leaf_.certificate_pem;
  const std::string& ca = ca_.certificate_pem;
  const int server = X509_PURPOSE_SSL_SERVER;
  EXPECT_EQ(VerifyError(leaf, ca, server, "localhost"), X509_V_OK);
  EXPECT_EQ(VerifyError(leaf, ca, server, "ps-0.default.svc"), X509_V_OK);
  EXPECT_EQ(VerifyError(leaf, ca, server, "", "127.0.0.1"), X509_V_OK);
  EXPECT_EQ(VerifyError(leaf, ca, server, "", "::1"), X509_V_OK);
  EXPECT_EQ(VerifyError(leaf, ca, server, "example.com"),
            X509_V_ERR_HOSTNAME_MISMATCH);
  EXPECT_EQ(VerifyError(leaf, ca, server, "a.b.default.svc"),
            X509_V_ERR_HOSTNAME_MISMATCH);
  EXPECT_EQ(VerifyError(leaf, ca, server, "", "10.0.0.1"),
            X509_V_ERR_IP_ADDRESS_MISMATCH);
}

TEST_F(TlsCertificatesTest, KeyMatchesItsCertificateOnly) {
  X509Ptr leaf = Certificate(leaf_.certificate_pem);
  KeyPtr leaf_key = PrivateKey(leaf_.private_key_pem);
  KeyPtr ca_key = PrivateKey(ca_.private_key_pem);
  EXPECT_EQ(X509_check_private_key(leaf.get(), leaf_key.get()), 1);
  EXPECT_EQ(X509_check_private_key(leaf.get(), ca_key.get()), 0);
  ERR_clear_error();
}

TEST_F(TlsCertificatesTest, SerialsAre128RandomBits) {
  absl::StatusOr<PemKeyPair> second =
      IssueCertificate(ca_, "task", {"localhost"}, kValidity);
  ASSERT_TRUE(second.ok()) << second.status();
  std::vector<std::string> serials;
  for (const std::string& pem :
       {ca_.certificate_pem, leaf_.certificate_pem, second->certificate_pem}) {
    X509Ptr certificate = Certificate(pem);
    BignumPtr serial(
        ASN1_INTEGER_to_BN(X509_get0_serialNumber(certificate.get()), nullptr));
    ASSERT_NE(serial, nullptr);
    EXPECT_FALSE(BN_is_negative(serial.get()));
    EXPECT_LE(BN_num_bits(serial.get()), 128);
    // Fewer than 97 bits happens once in 2^32.
    EXPECT_GT(BN_num_bits(serial.get()), 96);
    char* hex = BN_bn2hex(serial.get());
    serials.push_back(hex);
    OPENSSL_free(hex);
  }
  EXPECT_NE(serials[0], serials[1]);
  EXPECT_NE(serials[1], serials[2]);
  EXPECT_NE(serials[0], serials[2]);
}

TEST_F(TlsCertificatesTest, CertificatesOfOneCaDiffer) {
  absl::StatusOr<PemKeyPair> second =
      IssueCertificate(ca_, "task", {"localhost"}, kValidity);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_NE(second->private_key_pem, leaf_.private_key_pem);
  EXPECT_EQ(VerifyError(second->certificate_pem, ca_.certificate_pem),
            X509_V_OK);
}

TEST_F(TlsCertificatesTest, BadCaIsInvalidArgumentNamingIt) {
  PemKeyPair bad = ca_;
  bad.certificate_pem = "not a certificate";
  absl::StatusOr<PemKeyPair> issued =
      IssueCertificate(bad, "task", {"localhost"}, kValidity);
  EXPECT_EQ(issued.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(issued.status().message(),
              HasSubstr("cannot issue the certificate for \"task\": the CA's "
                        "certificate_pem is not a PEM certificate"));

  bad = ca_;
  bad.private_key_pem = "";
  issued = IssueCertificate(bad, "task", {"localhost"}, kValidity);
  EXPECT_EQ(issued.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(issued.status().message(),
              HasSubstr("the CA's private_key_pem is not an unencrypted PEM "
                        "private key"));

  // Another CA's key.
  absl::StatusOr<PemKeyPair> other =
      GenerateCertificateAuthority("other CA", kValidity);
  ASSERT_TRUE(other.ok()) << other.status();
  bad = ca_;
  bad.private_key_pem = other->private_key_pem;
  issued = IssueCertificate(bad, "task", {"localhost"}, kValidity);
  EXPECT_EQ(issued.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(issued.status().message(),
              HasSubstr("the CA's private_key_pem is not the key of its "
                        "certificate_pem (/CN=job CA)"));

  // A certificate that is not a CA's cannot sign others.
  issued = IssueCertificate(leaf_, "task", {"localhost"}, kValidity);
  EXPECT_EQ(issued.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(issued.status().message(),
              HasSubstr("the CA's certificate_pem (/CN=task) is not a CA "
                        "certificate"));
}

TEST_F(TlsCertificatesTest, BadHostsAreInvalidArgumentNamingThem) {
  for (const std::string& host : std::vector<std::string>{
           "", "two words", "[::1]", "*.svc", "a.*.svc", "host.",
           "fe80::1%eth0", std::string("127.0.0.1\0x", 11)}) {
    absl::StatusOr<PemKeyPair> issued =
        IssueCertificate(ca_, "task", {"localhost", host}, kValidity);
    EXPECT_EQ(issued.status().code(), absl::StatusCode::kInvalidArgument)
        << host;
    EXPECT_THAT(issued.status().message(),
                HasSubstr(absl::StrCat("cannot issue the certificate for "
                                       "\"task\": host \"",
                                       absl::CHexEscape(host),
                                       "\" is neither an IP address nor a "
                                       "DNS name")));
  }
  absl::StatusOr<PemKeyPair> issued =
      IssueCertificate(ca_, "task", {}, kValidity);
  EXPECT_EQ(issued.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(issued.status().message(), HasSubstr("no hosts"));
}

TEST_F(TlsCertificatesTest, UnusualButValidHostsAreAccepted) {
  absl::StatusOr<PemKeyPair> issued =
      IssueCertificate(ca_, "task",
                       {"ps-0.ps.default.svc.cluster.local", "my_host",
                        "10.1.2.3", "2001:db8::7"},
                       kValidity);
  ASSERT_TRUE(issued.ok()) << issued.status();
  EXPECT_EQ(VerifyError(issued->certificate_pem, ca_.certificate_pem,
                        X509_PURPOSE_SSL_SERVER, "", "2001:db8:0::7"),
            X509_V_OK);
}

TEST_F(TlsCertificatesTest, BadNamesAndValiditiesAreInvalidArgument) {
  const std::string long_name(65, 'x');
  for (const std::string& name : {std::string(), long_name}) {
    absl::StatusOr<PemKeyPair> ca =
        GenerateCertificateAuthority(name, kValidity);
    EXPECT_EQ(ca.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(ca.status().message(), HasSubstr("must have 1 to 64 bytes"));
    absl::StatusOr<PemKeyPair> issued =
        IssueCertificate(ca_, name, {"localhost"}, kValidity);
    EXPECT_EQ(issued.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(issued.status().message(),
                HasSubstr("must have 1 to 64 bytes"));
  }
  absl::StatusOr<PemKeyPair> not_utf8 =
      GenerateCertificateAuthority("\xff\xfe", kValidity);
  EXPECT_EQ(not_utf8.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(not_utf8.status().message(),
              HasSubstr("cannot make the CA certificate \"\\xff\\xfe\""));

  for (absl::Duration validity :
       {absl::ZeroDuration(), -absl::Hours(1), absl::Milliseconds(10),
        absl::Hours(24 * 365 * 101), absl::InfiniteDuration()}) {
    absl::StatusOr<PemKeyPair> ca =
        GenerateCertificateAuthority("job CA", validity);
    EXPECT_EQ(ca.status().code(), absl::StatusCode::kInvalidArgument)
        << validity;
    EXPECT_THAT(ca.status().message(),
                HasSubstr(absl::StrCat("cannot make the CA certificate \"job "
                                       "CA\": the validity ",
                                       absl::FormatDuration(validity))));
    absl::StatusOr<PemKeyPair> issued =
        IssueCertificate(ca_, "task", {"localhost"}, validity);
    EXPECT_EQ(issued.status().code(), absl::StatusCode::kInvalidArgument)
        << validity;
  }
  // The longest accepted validity crosses 2050, where X.509 switches from
  // UTCTime to GeneralizedTime.
  absl::StatusOr<PemKeyPair> long_lived =
      GenerateCertificateAuthority("job CA", absl::Hours(24 * 365 * 100));
  ASSERT_TRUE(long_lived.ok()) << long_lived.status();
  X509Ptr ca = Certificate(long_lived->certificate_pem);
  EXPECT_EQ(ASN1_STRING_type(X509_get0_notAfter(ca.get())),
            V_ASN1_GENERALIZEDTIME);
}

TEST(WriteTlsFilesTest, WritesTheFilesATaskReads) {
  absl::StatusOr<PemKeyPair> ca =
      GenerateCertificateAuthority("job CA", kValidity);
  ASSERT_TRUE(ca.ok()) << ca.status();
  absl::StatusOr<PemKeyPair> task =
      IssueCertificate(*ca, "task", {"localhost"}, kValidity);
  ASSERT_TRUE(task.ok()) << task.status();
  TestDir dir;
  // A key file from before, readable by all, is closed to them.
  const std::string old_key = dir.WriteFile("key.pem", "old key");
  ASSERT_EQ(chmod(old_key.c_str(), 0644), 0);

  absl::StatusOr<TlsFilePaths> paths = WriteTlsFiles(dir.path(), *ca, *task);
  ASSERT_TRUE(paths.ok()) << paths.status();
  EXPECT_EQ(paths->ca_file, dir.path() + "/ca.pem");
  EXPECT_EQ(paths->cert_file, dir.path() + "/cert.pem");
  EXPECT_EQ(paths->key_file, dir.path() + "/key.pem");
  EXPECT_EQ(ReadFile(paths->ca_file), ca->certificate_pem);
  EXPECT_EQ(ReadFile(paths->cert_file), task->certificate_pem);
  EXPECT_EQ(ReadFile(paths->key_file), task->private_key_pem);
  EXPECT_EQ(FileMode(paths->key_file), 0600u);
  // The CA's key stays in memory only.
  EXPECT_THAT(ReadFile(paths->ca_file), Not(HasSubstr("PRIVATE KEY")));

  // Written again, over the files of the first time.
  absl::StatusOr<TlsFilePaths> again =
      WriteTlsFiles(dir.path() + "/", *ca, *task);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->key_file, paths->key_file);
  EXPECT_EQ(ReadFile(paths->key_file), task->private_key_pem);
}

TEST(WriteTlsFilesTest, ErrorsNameThePath) {
  absl::StatusOr<PemKeyPair> ca =
      GenerateCertificateAuthority("job CA", kValidity);
  ASSERT_TRUE(ca.ok()) << ca.status();
  TestDir dir;
  const std::string missing = dir.path() + "/missing";
  absl::StatusOr<TlsFilePaths> paths = WriteTlsFiles(missing, *ca, *ca);
  EXPECT_EQ(paths.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(
      paths.status().message(),
      HasSubstr(absl::StrCat("cannot write ", missing, "/ca.pem: directory ",
                             missing, " does not exist")));
}

}  // namespace
}  // namespace distrt::rpc
